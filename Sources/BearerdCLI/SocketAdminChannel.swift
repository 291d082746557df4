import AsyncHTTPClient
import BearerdAdmin
import Foundation
import NIOCore
import NIOHTTP1

/// The running daemon, over its admin socket (HTTP/1.1 on a unix socket).
struct SocketAdminChannel: AdminChannel {
    let socket: String
    let client: HTTPClient

    init(socket: String) {
        self.socket = socket
        self.client = HTTPClient(
            eventLoopGroup: HTTPClient.defaultEventLoopGroup,
            configuration: HTTPClient.Configuration(redirectConfiguration: .disallow, decompression: .disabled)
        )
    }

    var daemon: String { "running (admin socket \(self.socket))" }

    func call(_ method: HTTPMethod, _ path: String, body: Data?) async throws -> (HTTPResponseStatus, Data) {
        let response = try await self.client.execute(try self.request(method, path, body: body), timeout: .seconds(120))
        let answer = try await response.body.collect(upTo: 1 << 20)
        return (response.status, Data(answer.readableBytesView))
    }

    func deviceLogin(_ onLine: @escaping @Sendable (Data) async -> Void) async throws {
        // The daemon polls until the person approves or the code expires (at most a day).
        let response = try await self.client.execute(
            try self.request(.POST, "/v1/login/device", body: nil),
            deadline: .now() + .hours(24)
        )
        var pending = Data()
        for try await buffer in response.body {
            pending.append(contentsOf: buffer.readableBytesView)
            while let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
                await onLine(pending[pending.startIndex..<newline])
                pending.removeSubrange(pending.startIndex...newline)
            }
        }
    }

    func close() async {
        try? await self.client.shutdown()
    }

    private func request(_ method: HTTPMethod, _ path: String, body: Data?) throws -> HTTPClientRequest {
        guard let url = URL(httpURLWithSocketPath: self.socket, uri: path) else {
            throw AdminMessages.Failure(error: "admin_error", message: "cannot address the admin socket \(self.socket)")
        }
        var request = HTTPClientRequest(url: url.absoluteString)
        request.method = method
        if let body {
            request.headers.add(name: "content-type", value: "application/json")
            request.body = .bytes(ByteBuffer(bytes: body))
        }
        return request
    }
}
