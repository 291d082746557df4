import BearerdAdmin
import BearerdTokens
import Foundation
import NIOHTTP1

/// How a CLI verb reaches the token engine: the running daemon's admin socket, or — when no
/// daemon runs — the same ``AdminAPI`` in this process, on the store under its lock. Either way
/// one process alone uses the refresh token.
protocol AdminChannel: Sendable {
    /// Says where the answers come from, for `status`.
    var daemon: String { get }
    func call(_ method: HTTPMethod, _ path: String, body: Data?) async throws -> (HTTPResponseStatus, Data)
    /// `POST /v1/login/device`: each JSON line of the answer as it arrives.
    func deviceLogin(_ onLine: @escaping @Sendable (Data) async -> Void) async throws
    func close() async
}

extension AdminChannel {
    /// Calls and decodes a 2xx answer; any other answer throws its ``AdminMessages/Failure``.
    func request<Answer: Decodable>(
        _ method: HTTPMethod,
        _ path: String,
        body: (some Encodable)? = String?.none,
        as: Answer.Type
    ) async throws -> Answer {
        let data = try body.map { try JSONEncoder().encode($0) }
        let (status, answer) = try await self.call(method, path, body: data)
        guard (200..<300).contains(status.code) else {
            throw (try? JSONDecoder().decode(AdminMessages.Failure.self, from: answer))
                ?? AdminMessages.Failure(error: "admin_error", message: "the daemon answered \(status.code) to \(path)")
        }
        do {
            return try TokenStatus.decoder().decode(Answer.self, from: answer)
        } catch {
            throw AdminMessages.Failure(
                error: "admin_error",
                message: "cannot read the daemon's answer to \(path): \(error)"
            )
        }
    }
}

/// The engine in this process (no daemon runs): the admin routes, called directly.
struct InProcessAdminChannel: AdminChannel {
    let api: AdminAPI
    let onClose: @Sendable () async -> Void
    var daemon: String { "not running (the store was used directly)" }

    func call(_ method: HTTPMethod, _ path: String, body: Data?) async throws -> (HTTPResponseStatus, Data) {
        let response = await self.api.respond(method: method, path: path, body: body ?? Data())
        return (response.status, response.body)
    }

    func deviceLogin(_ onLine: @escaping @Sendable (Data) async -> Void) async throws {
        await self.api.deviceLogin(path: "/v1/login/device") { line in await onLine(line) }
    }

    func close() async {
        await self.onClose()
    }
}
