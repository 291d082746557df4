import BearerdAuth
import BearerdTestSupport
import Foundation
import Logging
import Synchronization
import Testing

@testable import BearerdTokens

/// `auth.discover`: the authorization server from the API's metadata (RFC 9728), a client
/// registered there (RFC 7591), kept in the store.
@Suite("Discovery from the API and client registration")
struct ResourceDiscoveryTests {
    static let api = "https://api.example/v2"
    static let issuer = "https://idp.example"

    @Test func theWellKnownURIGoesBetweenHostAndPath() {
        #expect(
            ResourceDiscovery.wellKnown("https://api.example/v2/")
                == "https://api.example/.well-known/oauth-protected-resource/v2"
        )
        #expect(
            ResourceDiscovery.wellKnown("https://api.example")
                == "https://api.example/.well-known/oauth-protected-resource"
        )
        #expect(
            ResourceDiscovery.wellKnown("http://127.0.0.1:9/")
                == "http://127.0.0.1:9/.well-known/oauth-protected-resource"
        )
    }

    /// An API, its metadata (at the well-known URI or only through its 401), an authorization
    /// server with a registration endpoint; `resource` is what the metadata says it is.
    static func server(
        wellKnown: Bool = true,
        metadataURL: String = "https://api.example/meta/pr",
        resource: String = api,
        authorizationServer: String = issuer,
        registration: String = #"{"client_id":"registered-1","token_endpoint_auth_method":"none"}"#
    ) -> FakeTokenEndpoint {
        let metadata = #"{"resource":"\#(resource)","authorization_servers":["\#(authorizationServer)"]}"#
        return FakeTokenEndpoint { request, _ in
            switch request.url {
            case "https://api.example/.well-known/oauth-protected-resource/v2" where wellKnown:
                return FakeTokenEndpoint.json(metadata)
            case metadataURL:
                return FakeTokenEndpoint.json(metadata)
            case api:
                return TokenHTTPResponse(
                    status: 401,
                    headers: [
                        ("WWW-Authenticate", #"Bearer realm="api", resource_metadata="\#(metadataURL)""#)
                    ]
                )
            case issuer + "/.well-known/oauth-authorization-server":
                return FakeTokenEndpoint.json(
                    #"{"issuer":"\#(issuer)","token_endpoint":"\#(issuer)/token","authorization_endpoint":"\#(issuer)/authorize","registration_endpoint":"\#(issuer)/register"}"#
                )
            case issuer + "/register":
                return FakeTokenEndpoint.json(registration, status: 201)
            case issuer + "/token":
                return FakeTokenEndpoint.tokens(access: "access-1", refresh: "refresh-1")
            default:
                return TokenHTTPResponse(status: 404)
            }
        }
    }

    static func source() -> OAuth2Source {
        OAuth2Source(settings: .init(endpoint: .resource(api), clientID: "", clientAuthentication: .none))
    }

    @Test(arguments: [true, false])
    func theIssuerIsFoundAtTheWellKnownURIOrThroughThe401(wellKnown: Bool) async throws {
        let endpoint = Self.server(wellKnown: wellKnown)
        let found = try await ResourceDiscovery.authorizationServer(
            resource: Self.api,
            allowInsecureHTTP: false,
            transport: endpoint
        )
        #expect(found.issuer == Self.issuer)
        #expect(found.document.hasSuffix(wellKnown ? "/oauth-protected-resource/v2" : "/meta/pr"))
    }

    @Test(
        "metadata for another resource, or that points credentials at plain http, is refused",
        arguments: [
            ("https://other.example/v2", issuer, "its resource is not upstream.url"),
            (api, "http://idp.example", "plain-http authorization server"),
            (api, "javascript:alert(1)", "not an http(s) URL"),
        ]
    )
    func refused(resource: String, authorizationServer: String, problem: String) async {
        let endpoint = Self.server(resource: resource, authorizationServer: authorizationServer)
        do {
            _ = try await ResourceDiscovery.authorizationServer(
                resource: Self.api,
                allowInsecureHTTP: false,
                transport: endpoint
            )
            Issue.record("accepted \(resource) / \(authorizationServer)")
        } catch {
            #expect("\(error)".contains(problem), "\(error)")
            #expect("\(error)".contains("set auth.issuer and auth.client_id"))
        }
    }

    /// The API's 401 may point only at its own origin: bearerd fetches nothing elsewhere for it.
    @Test func resourceMetadataOnAnotherOriginIsNotFetched() async {
        let endpoint = Self.server(wellKnown: false, metadataURL: "https://elsewhere.example/pr")
        do {
            _ = try await ResourceDiscovery.authorizationServer(
                resource: Self.api,
                allowInsecureHTTP: false,
                transport: endpoint
            )
            Issue.record("followed another origin's metadata")
        } catch {
            #expect("\(error)".contains("another origin"), "\(error)")
        }
        #expect(!endpoint.requests.contains { $0.url.contains("elsewhere") })
    }

    /// A configured client with `auth.discover`: the issuer first found is kept in the store, and
    /// a password never goes to a server the API named.
    @Test func aConfiguredClientPinsTheIssuerAndRefusesPasswords() async throws {
        let store = MemoryTokenStore(nil)
        let settings = OAuth2Source.Settings(
            endpoint: .resource(Self.api),
            clientID: "mine",
            clientAuthentication: .none
        )
        let manager = TokenManager(
            source: OAuth2Source(settings: settings),
            transport: Self.server(),
            store: store,
            clock: ManualTokenClock(),
            clocks: ManualClockSource(),
            logger: Logger(label: "discovery-test")
        )
        _ = try await manager.beginAuthorization(redirectURI: "http://127.0.0.1:9/callback")
        let pin = try #require(try store.load()?.registration)
        #expect(pin.isPin && pin.issuer == Self.issuer && pin.clientID == "mine")
        do {
            try await manager.logIn(username: "alice", password: Secret("alice-pass"))
            Issue.record("a password went to a discovered server")
        } catch {
            #expect(error.message.contains("a password goes only to one the config names"), "\(error.message)")
        }
        // Restarted, with the API now naming another server: the pinned one is used.
        let moved = Self.server(authorizationServer: "https://evil.example")
        let restarted = TokenManager(
            source: OAuth2Source(settings: settings),
            transport: moved,
            store: store,
            clock: ManualTokenClock(),
            clocks: ManualClockSource(),
            logger: Logger(label: "discovery-test")
        )
        let prompt = try await restarted.beginAuthorization(redirectURI: "http://127.0.0.1:9/callback")
        #expect(prompt.authorizationURL.hasPrefix(Self.issuer + "/authorize?"))
        #expect(!moved.requests.contains { $0.url.contains("evil") })
    }

    @Test func aFixedRedirectPortIsRegistered() throws {
        let body = ClientRegistration.request(scopes: [], clientName: "bearerd", redirectPort: 8400)
        #expect(JSONValue.parse(body)?["redirect_uris"] == .array([.string("http://127.0.0.1:8400/callback")]))
    }

    @Test(
        "a registration answer bearerd cannot use is refused",
        arguments: [
            (#"{"token_endpoint_auth_method":"none"}"#, "client_id"),
            (#"{"client_id":"","token_endpoint_auth_method":"none"}"#, "client_id"),
            (#"{"client_id":"c","token_endpoint_auth_method":"client_secret_basic"}"#, "without a client_secret"),
            (#"{"client_id":"c","token_endpoint_auth_method":"private_key_jwt"}"#, "cannot use"),
            ("not json", "JSON object"),
        ]
    )
    func badRegistration(body: String, problem: String) {
        #expect(throws: TokenEngineError.self) {
            _ = try ClientRegistration.parse(Array(body.utf8), issuer: Self.issuer, resource: Self.api)
        }
        do {
            _ = try ClientRegistration.parse(Array(body.utf8), issuer: Self.issuer, resource: Self.api)
        } catch { #expect("\(error)".contains(problem), "\(error)") }
    }

    @Test func aLoginRegistersOnceSendsTheResourceAndTheStoreKeepsTheClient() async throws {
        let endpoint = Self.server()
        let store = MemoryTokenStore(nil)
        let manager = TokenManager(
            source: Self.source(),
            transport: endpoint,
            store: store,
            clock: ManualTokenClock(),
            clocks: ManualClockSource(),
            logger: Logger(label: "discovery-test")
        )
        let prompt = try await manager.beginAuthorization(redirectURI: "http://127.0.0.1:9/callback")
        let query = URLComponents(string: prompt.authorizationURL)?.queryItems ?? []
        #expect(query.first { $0.name == "client_id" }?.value == "registered-1")
        #expect(query.first { $0.name == "resource" }?.value == Self.api, "RFC 8707: the API itself")
        let registered = try #require(endpoint.requests.first { $0.url.hasSuffix("/register") })
        let asked = try #require(JSONValue.parse(registered.body ?? []))
        #expect(asked["redirect_uris"] == .array([.string("http://127.0.0.1/callback")]))
        #expect(asked["token_endpoint_auth_method"]?.stringValue == "none")
        try await manager.logIn(authorizationCode: Secret("code"), state: prompt.state, issuer: nil)
        let redeemed = FakeTokenEndpoint.form(try #require(endpoint.requests.last))
        #expect(redeemed["client_id"] == "registered-1" && redeemed["resource"] == Self.api)
        let stored = try #require(try store.load())
        #expect(stored.registration?.clientID == "registered-1" && stored.registration?.issuer == Self.issuer)
        #expect(await manager.status().discovered?.registered == true)

        // The next start takes the client from the store: no second registration.
        let again = Self.server()
        let restarted = TokenManager(
            source: Self.source(),
            transport: again,
            store: store,
            clock: ManualTokenClock(),
            clocks: ManualClockSource(),
            logger: Logger(label: "discovery-test")
        )
        _ = try await restarted.beginAuthorization(redirectURI: "http://127.0.0.1:9/callback")
        #expect(!again.requests.contains { $0.url.hasSuffix("/register") })
        _ = await restarted.logOut()
        #expect(try store.load()?.registration?.clientID == "registered-1", "a logout keeps the client")
    }
}
