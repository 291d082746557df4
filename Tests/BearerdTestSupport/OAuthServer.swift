import Foundation
import NIOCore
import NIOHTTP1

/// django-oauth-toolkit on 127.0.0.1, started by the project's `scripts/oauth-server`.
public struct OAuthServer: Sendable {
    public let port: Int
    public let ttl: Int
    /// Script options beyond port and TTL (`--grace`, `--token-delay`, `--token-marks`).
    public let options: [String]

    public var baseURL: String { "http://127.0.0.1:\(self.port)" }
    public var tokenURL: String { self.baseURL + "/o/token/" }

    static var repository: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
    }

    /// Starts it on a free port with access tokens that live `ttl` seconds.
    public static func start(ttl: Int, options: [String] = []) async throws -> OAuthServer {
        let port = try RefusingPort().port  // free now; released when the value goes
        let server = OAuthServer(port: port, ttl: ttl, options: options)
        try await server.start()
        return server
    }

    /// Starts it (again: the database, and so every issued token, is kept).
    public func start() async throws {
        try await Self.script(["start", "--port", String(self.port), "--ttl", String(self.ttl)] + self.options)
    }

    public func stop() async throws {
        try await Self.script(["stop", "--port", String(self.port)])
    }

    /// Runs the script with its output in a file: the server it starts daemonizes and may keep
    /// inherited descriptors, so a pipe would never reach its end.
    private static func script(_ arguments: [String]) async throws {
        let log = FileManager.default.temporaryDirectory.appendingPathComponent("oauth-server-\(UUID().uuidString).log")
        guard FileManager.default.createFile(atPath: log.path, contents: nil) else {
            throw TestClientError("cannot create \(log.path)")
        }
        defer { try? FileManager.default.removeItem(at: log) }
        let output = try FileHandle(forWritingTo: log)
        defer { try? output.close() }
        let process = Process()
        process.executableURL = Self.repository.appendingPathComponent("scripts/oauth-server")
        process.arguments = arguments
        process.standardOutput = output
        process.standardError = output
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let clock = ContinuousClock()
        let deadline = clock.now + .seconds(300)
        while process.isRunning {
            guard clock.now < deadline else {
                process.terminate()
                throw TestClientError("scripts/oauth-server \(arguments.joined(separator: " ")) did not finish")
            }
            try await Task.sleep(for: .milliseconds(50))
        }
        guard process.terminationStatus == 0 else {
            let text = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
            throw TestClientError("scripts/oauth-server \(arguments.joined(separator: " ")) failed: \(text)")
        }
    }

    /// Logs alice in with the password grant and returns the refresh token.
    public func passwordLogin(group: any EventLoopGroup) async throws -> String {
        let response = try await TestHTTPClient.withConnection(to: .tcp(port: self.port), group: group) { client in
            try await client.send(
                .POST,
                "/o/token/",
                headers: [
                    "host": "127.0.0.1", "content-type": "application/x-www-form-urlencoded",
                    "authorization": "Basic " + Data("pw-client:pw-secret".utf8).base64EncodedString(),
                ],
                text: "grant_type=password&username=alice&password=alice-pass"
            )
        }
        guard response.status == 200,
            let json = try JSONSerialization.jsonObject(with: Data(response.bodyText.utf8)) as? [String: Any],
            let refresh = json["refresh_token"] as? String
        else { throw TestClientError("password login failed: \(response.status) \(response.bodyText)") }
        return refresh
    }
}
