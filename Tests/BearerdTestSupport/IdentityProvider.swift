import Foundation

/// authlib's OAuth 2.0 server on 127.0.0.1 with `private_key_jwt` and `tls_client_auth`, started
/// by the project's `scripts/idp-server`. Clients: jwt-client, mtls-client, secret-client.
package struct IdentityProvider: Sendable {
    package let port: Int
    package let directory: TemporaryDirectory
    package let https: Bool

    package var baseURL: String { "\(self.https ? "https" : "http")://127.0.0.1:\(self.port)" }
    package var tokenURL: String { self.baseURL + "/oauth/token" }

    /// Starts it on a free port with `ttl`-second access tokens. `clientKeys`: the public keys
    /// jwt-client may sign with; `tls`: serve https and ask for client certificates chained to
    /// `tls.ca`, where mtls-client's must carry `subject`; `platformKeys`: the public keys of the
    /// platform whose tokens it exchanges (RFC 8693) and takes as fed-client's assertions.
    package static func start(
        ttl: Int,
        clientKeys: String? = nil,
        tls: (certificate: String, key: String, ca: String, subject: String)? = nil,
        jwt: Bool = false,
        dpopNonceSeconds: Double? = nil,
        platformKeys: String? = nil,
        arguments extra: [String] = []
    ) async throws -> IdentityProvider {
        let directory = try TemporaryDirectory()
        var arguments = ["--dir", directory.path + "/idp", "--ttl", String(ttl)]
        if let clientKeys { arguments += ["--client-keys", clientKeys] }
        if let tls { arguments += ["--tls", tls.certificate, tls.key, tls.ca, "--mtls-subject", tls.subject] }
        if jwt { arguments.append("--jwt") }
        if let dpopNonceSeconds { arguments += ["--dpop", "--nonce-seconds", String(dpopNonceSeconds)] }
        if let platformKeys { arguments += ["--platform-keys", platformKeys] }
        arguments += extra
        return try await FreePort.serve { [arguments] port in
            try await ProjectScript.run("scripts/idp-server", ["start", "--port", String(port)] + arguments)
            return IdentityProvider(port: port, directory: directory, https: tls != nil)
        }
    }

    package func stop() async throws {
        try await ProjectScript.run("scripts/idp-server", ["stop", "--dir", self.directory.path + "/idp"])
    }

    /// One line per token request: `<grant> <ok|status> <auth method> <client cert sha256|->`.
    package var marks: [String] {
        let text = (try? String(contentsOfFile: self.directory.path + "/idp/marks", encoding: .utf8)) ?? ""
        return text.split(separator: "\n").map(String.init)
    }
}
