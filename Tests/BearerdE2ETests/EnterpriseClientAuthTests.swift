import BearerdTestSupport
import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import Testing

/// bearerd against authlib's OAuth 2.0 server (`scripts/idp-server`) with the client
/// authentications identity providers now ask of confidential clients: a signed assertion
/// (`private_key_jwt`, RFC 7523) and a client certificate (`tls_client_auth`, RFC 8705). Each
/// logs in, serves, and refreshes across expiries; a wrong key or certificate is refused.
@Suite(
    "Enterprise client authentication against authlib",
    .serialized,
    .enabled(if: ProcessInfo.processInfo.environment["BEARERD_SKIP_E2E"] == nil),
    .timeLimit(.minutes(3))
)
struct EnterpriseClientAuthTests {
    /// A daemon in front of the identity provider's own protected resource.
    struct Daemon {
        let process: BearerdProcess
        let config: String
        let port: Int
    }

    static func serve(
        _ auth: String,
        idp: IdentityProvider,
        directory: TemporaryDirectory,
        upstream: String = "",
        tokenEndpoint: String? = nil
    ) async throws -> Daemon {
        let config = try directory.write(
            """
            listen: ["127.0.0.1:0"]
            upstream:
              url: \(idp.baseURL)
            \(idp.https ? "  ca_file: \(directory.path)/ca.pem" : "")
            \(upstream)
            auth:
              \(tokenEndpoint ?? "token_url: \(idp.tokenURL)")
            \(auth)
            admin:
              socket: \(directory.path)/admin.sock
            log:
              access: false
            """,
            to: "bearerd.yaml"
        )
        let process = try BearerdProcess(["serve", "--config", config])
        try await process.waitUntilReady()
        return Daemon(process: process, config: config, port: try #require(process.proxyPort))
    }

    /// Runs `body` with an event loop group, then stops `idp` whatever happened. A daemon made in
    /// `body` ends with it (its process is terminated when the value goes).
    static func against(
        _ idp: IdentityProvider,
        _ body: (any EventLoopGroup) async throws -> Void
    ) async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        do {
            try await body(group)
        } catch {
            try? await idp.stop()
            try? await group.shutdownGracefully()
            throw error
        }
        try await idp.stop()
        try await group.shutdownGracefully()
    }

    static func login(_ daemon: Daemon) async throws -> (status: Int32, stderr: String) {
        let login = try await BearerdProcess.run(
            ["login", "-c", daemon.config, "--username", "alice", "--password-stdin"],
            input: "alice-pass\n"
        )
        return (login.status, login.stderr)
    }

    static func get(
        _ daemon: Daemon,
        _ path: String = "/api/hello",
        group: any EventLoopGroup
    ) async throws -> TestHTTPResponse {
        try await TestHTTPClient.withConnection(to: .tcp(port: daemon.port), group: group) { client in
            try await client.send(.GET, path)
        }
    }

    @Test(arguments: [("rsa:2048", "RS256"), ("rsa:3072", "PS256"), ("ec", "ES256")])
    func privateKeyJWTLogsInAndRefreshesAcrossExpiries(key kind: String, algorithm: String) async throws {
        let directory = try TemporaryDirectory()
        let key = try TestKeys.make(kind, named: "client", in: directory)
        // Registered under its kid, as in an IdP's JWKS, beside another key of the client's.
        let old = try TestKeys.make("rsa:2048", named: "old", in: directory)
        let registered = try directory.write(
            "kid: bearerd-old\n\(try String(contentsOfFile: old.publicKey, encoding: .utf8))"
                + "kid: bearerd-\(algorithm.lowercased())\n\(try String(contentsOfFile: key.publicKey, encoding: .utf8))",
            to: "registered.pem"
        )
        let idp = try await IdentityProvider.start(ttl: 2, clientKeys: registered)
        try await Self.against(idp) { group in
            let bearerd = try await Self.serve(
                """
                  client_id: jwt-client
                  client_auth: private_key_jwt
                  client_key_file: \(key.privateKey)
                  client_key_id: bearerd-\(algorithm.lowercased())
                  client_assertion_alg: \(algorithm)
                """,
                idp: idp,
                directory: directory
            )
            let login = try await Self.login(bearerd)
            #expect(login.status == 0, "\(login.stderr)")
            #expect(try await Self.get(bearerd, group: group).bodyText.contains("alice"))
            // Two lifetimes later the token has been refreshed with a new assertion each time.
            try await Task.sleep(for: .seconds(5))
            let later = try await Self.get(bearerd, group: group)
            #expect(later.status == 200, "\(later.bodyText)")
            let marks = idp.marks
            #expect(marks.first == "password ok private_key_jwt -", "\(marks)")
            #expect(marks.filter { $0 == "refresh_token ok private_key_jwt -" }.count >= 2, "\(marks)")
            #expect(marks.allSatisfy { $0.hasSuffix(" ok private_key_jwt -") }, "\(marks)")
            #expect(!bearerd.process.stderr.contains("BEGIN"), "no key material in the log")
        }
    }

    /// A key rotated in its file (the new one registered first, then the file replaced) signs
    /// from the next token request on: no restart, no reload.
    @Test func aKeyRotatedInItsFileSignsTheNextRequest() async throws {
        let directory = try TemporaryDirectory()
        let old = try TestKeys.make("rsa:2048", named: "old", in: directory)
        let new = try TestKeys.make("ec", named: "new", in: directory)
        let registered = try directory.write(
            try String(contentsOfFile: old.publicKey, encoding: .utf8),
            to: "registered.pem"
        )
        let keyFile = try directory.write(try String(contentsOfFile: old.privateKey, encoding: .utf8), to: "client.key")
        let idp = try await IdentityProvider.start(ttl: 2, clientKeys: registered)
        try await Self.against(idp) { group in
            let bearerd = try await Self.serve(
                "  client_id: jwt-client\n  client_auth: private_key_jwt\n  client_key_file: \(keyFile)",
                idp: idp,
                directory: directory
            )
            #expect(try await Self.login(bearerd).status == 0)
            // The server learns the new key and forgets the old; then the file is replaced.
            _ = try directory.write(try String(contentsOfFile: new.publicKey, encoding: .utf8), to: "registered.pem")
            _ = try directory.write(try String(contentsOfFile: new.privateKey, encoding: .utf8), to: "client.key")
            let before = idp.marks.count
            try await waitUntil(.seconds(10), every: .milliseconds(200)) {
                idp.marks.dropFirst(before).contains("refresh_token ok private_key_jwt -")
            }
            let marks = Array(idp.marks.dropFirst(before))
            #expect(marks.allSatisfy { $0.hasSuffix(" ok private_key_jwt -") }, "signed with the old key: \(marks)")
            #expect(try await Self.get(bearerd, group: group).status == 200)
        }
    }

    @Test func aKeyTheServerDoesNotKnowIsRefusedWithAClearError() async throws {
        let directory = try TemporaryDirectory()
        let registered = try TestKeys.make("rsa:2048", named: "registered", in: directory)
        let other = try TestKeys.make("rsa:2048", named: "other", in: directory)
        let idp = try await IdentityProvider.start(ttl: 60, clientKeys: registered.publicKey)
        try await Self.against(idp) { _ in
            let bearerd = try await Self.serve(
                "  client_id: jwt-client\n  client_auth: private_key_jwt\n  client_key_file: \(other.privateKey)",
                idp: idp,
                directory: directory
            )
            let login = try await Self.login(bearerd)
            #expect(login.status != 0)
            #expect(login.stderr.contains("invalid_client"), "\(login.stderr)")
            #expect(login.stderr.contains("auth.client_key_file"), "names the key to check: \(login.stderr)")
            #expect(!login.stderr.contains("client_secret_file"), "no secret is involved: \(login.stderr)")
            #expect(idp.marks == ["password 400 private_key_jwt -"], "\(idp.marks)")
        }
    }

    @Test func tlsClientAuthLogsInRefreshesAndTakesUpARenewedCertificate() async throws {
        let directory = try TemporaryDirectory()
        let server = try TestCertificates(dnsNames: ["localhost"], ipAddresses: ["127.0.0.1"])
        try FileManager.default.copyItem(atPath: server.caFile, toPath: directory.path + "/ca.pem")
        let subject = "CN=mtls-client,O=bearerd tests"
        let first = try TestKeys.clientCertificate(
            subject: "/O=bearerd tests/CN=mtls-client",
            named: "first",
            caCertificate: server.caFile,
            caKey: server.caKeyFile,
            in: directory
        )
        let stranger = try TestKeys.clientCertificate(
            subject: "/O=bearerd tests/CN=someone-else",
            named: "stranger",
            caCertificate: server.caFile,
            caKey: server.caKeyFile,
            in: directory
        )
        // The files bearerd reads; a renewal replaces them.
        let certificate = directory.path + "/client.pem"
        let key = directory.path + "/client.key"
        try Self.install(first, certificate: certificate, key: key)
        let idp = try await IdentityProvider.start(
            ttl: 2,
            tls: (server.certificateFile, server.keyFile, server.caFile, subject)
        )
        try await Self.against(idp) { group in
            let bearerd = try await Self.serve(
                """
                  client_id: mtls-client
                  client_auth: tls_client_auth
                  ca_file: \(server.caFile)
                  tls_cert_file: \(certificate)
                  tls_key_file: \(key)
                """,
                idp: idp,
                directory: directory
            )
            #expect(try await Self.login(bearerd).status == 0)
            #expect(try await Self.get(bearerd, group: group).bodyText.contains("alice"))
            try await Task.sleep(for: .seconds(3))
            #expect(try await Self.get(bearerd, group: group).status == 200)
            let before = idp.marks
            #expect(before.count >= 2 && before.allSatisfy { $0.contains(" ok tls_client_auth ") }, "\(before)")
            #expect(Set(before.map { $0.split(separator: " ").last! }).count == 1, "one certificate so far")

            // A renewal: a new key and certificate for the same subject, written in place.
            let renewed = try TestKeys.clientCertificate(
                subject: "/O=bearerd tests/CN=mtls-client",
                named: "renewed",
                caCertificate: server.caFile,
                caKey: server.caKeyFile,
                in: directory
            )
            try Self.install(renewed, certificate: certificate, key: key)
            try await Task.sleep(for: .seconds(3))
            #expect(try await Self.get(bearerd, group: group).status == 200)
            let after = idp.marks.dropFirst(before.count)
            #expect(!after.isEmpty && after.allSatisfy { $0.contains(" ok tls_client_auth ") }, "\(after)")
            #expect(after.last?.split(separator: " ").last != before.last?.split(separator: " ").last, "renewed")
            #expect(bearerd.process.stderr.contains("presenting the new one"))

            // A certificate of another subject is refused, and says so.
            try Self.install(stranger, certificate: certificate, key: key)
            try await Task.sleep(for: .seconds(3))
            let refused = try await Self.get(bearerd, group: group)
            #expect(refused.status != 200)
            #expect(idp.marks.last?.contains("refresh_token 40") == true, "\(idp.marks)")
        }
    }

    @Test func anUpstreamThatAsksForMTLSGetsTheClientCertificateAndItsRenewal() async throws {
        let directory = try TemporaryDirectory()
        let server = try TestCertificates(dnsNames: ["localhost"], ipAddresses: ["127.0.0.1"])
        try FileManager.default.copyItem(atPath: server.caFile, toPath: directory.path + "/ca.pem")
        let make = { (name: String) in
            try TestKeys.clientCertificate(
                subject: "/O=bearerd tests/CN=upstream-client",
                named: name,
                caCertificate: server.caFile,
                caKey: server.caKeyFile,
                in: directory
            )
        }
        let certificate = directory.path + "/upstream.pem"
        let key = directory.path + "/upstream.key"
        try Self.install(try make("first"), certificate: certificate, key: key)
        let idp = try await IdentityProvider.start(
            ttl: 60,
            tls: (server.certificateFile, server.keyFile, server.caFile, "CN=unused")
        )
        try await Self.against(idp) { group in
            let bearerd = try await Self.serve(
                """
                  client_id: secret-client
                  client_secret_file: \(try directory.write("secret-pass\n", to: "secret"))
                  ca_file: \(server.caFile)
                """,
                idp: idp,
                directory: directory,
                upstream: """
                      client_cert_file: \(certificate)
                      client_key_file: \(key)
                      idle_timeout: 200ms
                    """
            )
            #expect(try await Self.login(bearerd).status == 0)
            let first = try await Self.get(bearerd, "/api/cert", group: group)
            #expect(first.status == 200 && first.bodyText.contains("certificate"), "\(first.bodyText)")

            // Renewed on disk: once the pooled connection has gone idle, the next one presents it.
            try Self.install(try make("renewed"), certificate: certificate, key: key)
            try await Task.sleep(for: .milliseconds(1500))
            let second = try await Self.get(bearerd, "/api/cert", group: group)
            #expect(second.status == 200 && second.bodyText.contains("certificate"), "\(second.bodyText)")
            #expect(second.bodyText != first.bodyText, "the renewed certificate is presented")
            #expect(bearerd.process.stderr.contains("new upstream connections present the new one"))
        }
    }

    /// Writes a certificate and its key where bearerd reads them, each through a rename.
    static func install(_ files: (certificate: String, key: String), certificate: String, key: String) throws {
        for (from, to) in [(files.key, key), (files.certificate, certificate)] {
            try? FileManager.default.removeItem(atPath: to + ".new")
            try FileManager.default.copyItem(atPath: from, toPath: to + ".new")
            chmod(to + ".new", 0o600)
            rename(to + ".new", to)
        }
    }
}
