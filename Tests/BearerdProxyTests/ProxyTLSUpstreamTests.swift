import BearerdTestSupport
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import Synchronization
import Testing

/// An https upstream: the certificate is verified against `upstream.ca_file` (or the system's
/// roots), and the name checked and sent as SNI is the URL's host or `upstream.server_name`.
@Suite("https upstreams")
struct ProxyTLSUpstreamTests {
    let certificates: TestCertificates
    let seenServerNames = SeenNames()

    init() throws {
        self.certificates = try TestCertificates(dnsNames: ["localhost", "api.internal.test"])
    }

    func serverContext() throws -> NIOSSLContext {
        var tls = TLSConfiguration.makeServerConfiguration(
            certificateChain: try NIOSSLCertificate.fromPEMFile(self.certificates.certificateFile).map {
                .certificate($0)
            },
            privateKey: .privateKey(try NIOSSLPrivateKey(file: self.certificates.keyFile, format: .pem))
        )
        let seen = self.seenServerNames
        tls.sslContextCallback = { values, promise in
            seen.add(values.serverHostname)
            promise.succeed(NIOSSLContextConfigurationOverride())
        }
        return try NIOSSLContext(configuration: tls)
    }

    /// For an upstream named `localhost`: NIO resolves a name on a dispatch queue, A and AAAA
    /// apart, and publishes the answer that comes after the connection on the loop. A group shut
    /// down at the test's end may be gone by then, which SWIFTNIO_STRICT turns into a crash (seen
    /// once, in a fresh clone's run); NIO's own singleton group is never shut down.
    static var resolvingGroup: any EventLoopGroup { MultiThreadedEventLoopGroup.singleton }

    @Test func forwardsOverTLSVerifiedAgainstTheConfiguredCA() async throws {
        try await ProxyFixture.with(
            upstreamYAML: "ca_file: \(self.certificates.caFile)",
            upstreamURL: "https://localhost:PORT/v1",
            upstreamTLS: try self.serverContext(),
            group: Self.resolvingGroup
        ) { proxy in
            let response = try await proxy.send(.GET, "/secure?x=1")
            #expect(response.status == 200)
            let seen = try #require(proxy.upstream.requests.first)
            #expect(seen.head.uri == "/v1/secure?x=1")
            #expect(seen.head.headers["authorization"] == ["Bearer \(ProxyFixture.token)"])
            #expect(seen.head.headers["host"] == ["localhost:\(proxy.upstream.port)"])
            #expect(self.seenServerNames.names == ["localhost"], "SNI carries the URL's host")
        }
    }

    @Test func serverNameOverridesTheNameCheckedAndSent() async throws {
        try await ProxyFixture.with(
            upstreamYAML: "ca_file: \(self.certificates.caFile)\nserver_name: api.internal.test",
            upstreamURL: "https://127.0.0.1:PORT",
            upstreamTLS: try self.serverContext()
        ) { proxy in
            let response = try await proxy.send(.GET, "/x")
            #expect(response.status == 200)
            #expect(self.seenServerNames.names == ["api.internal.test"])
        }
    }

    @Test func anUntrustedCertificateIs502AndNothingIsSent() async throws {
        try await ProxyFixture.with(
            upstreamURL: "https://localhost:PORT",
            upstreamTLS: try self.serverContext(),
            group: Self.resolvingGroup
        ) { proxy in
            let response = try await proxy.send(.GET, "/x")
            #expect(response.status == 502)
            #expect(
                proxy.upstream.requests.isEmpty,
                "the request (and the token) must not reach an unverified upstream"
            )
        }
    }

    @Test func aNameMismatchIs502() async throws {
        try await ProxyFixture.with(
            upstreamYAML: "ca_file: \(self.certificates.caFile)\nserver_name: other.example",
            upstreamURL: "https://localhost:PORT",
            upstreamTLS: try self.serverContext(),
            group: Self.resolvingGroup
        ) { proxy in
            let response = try await proxy.send(.GET, "/x")
            #expect(response.status == 502)
            #expect(proxy.upstream.requests.isEmpty)
        }
    }
}

/// SNI names the test upstream saw, from the TLS callback thread.
final class SeenNames: Sendable {
    private let state = Mutex<[String]>([])
    var names: [String] { self.state.withLock { $0 } }
    func add(_ name: String?) { self.state.withLock { $0.append(name ?? "(none)") } }
}
