import Foundation
import NIOCore
import NIOHTTP1

/// django-oauth-toolkit on 127.0.0.1, started by the project's `scripts/oauth-server`.
package struct OAuthServer: Sendable {
    package let port: Int
    package let ttl: Int
    /// Script options beyond port and TTL (`--grace`, `--token-delay`, `--token-marks`).
    package let options: [String]

    package var baseURL: String { "http://127.0.0.1:\(self.port)" }
    package var tokenURL: String { self.baseURL + "/o/token/" }

    /// Starts it on a free port with access tokens that live `ttl` seconds.
    package static func start(ttl: Int, options: [String] = []) async throws -> OAuthServer {
        try await FreePort.serve { port in
            let server = OAuthServer(port: port, ttl: ttl, options: options)
            try await server.start()
            return server
        }
    }

    /// The same server (port, database, issued tokens) with other script options, not started.
    package func with(options: [String]) -> OAuthServer {
        OAuthServer(port: self.port, ttl: self.ttl, options: options)
    }

    /// Starts it (again: the database, and so every issued token, is kept).
    package func start() async throws {
        try await ProjectScript.run(
            "scripts/oauth-server",
            ["start", "--port", String(self.port), "--ttl", String(self.ttl)] + self.options
        )
    }

    package func stop() async throws {
        try await ProjectScript.run("scripts/oauth-server", ["stop", "--port", String(self.port)])
    }

    /// Logs alice in with the password grant and returns the refresh token.
    package func passwordLogin(group: any EventLoopGroup) async throws -> String {
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
