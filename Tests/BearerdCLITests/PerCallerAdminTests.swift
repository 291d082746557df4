import BearerdAdmin
import BearerdAuth
import BearerdSockets
import BearerdTestSupport
import BearerdTokens
import Foundation
import Logging
import NIOHTTP1
import Synchronization
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Every admin call as another local user: a user of a per_caller session logs in, logs out and
/// reads status and token for their own uid only; everything else (another user's tokens, another
/// session, the daemon's calls) is root's and bearerd's own user's.
@Suite("admin calls by local users of a per_caller session")
struct PerCallerAdminTests {
    static let alice = Caller(uid: 60_001, gid: 60_001)
    static let bob = Caller(uid: 60_002, gid: 60_002)
    static let outsider = Caller(uid: 60_009, gid: 60_009)

    let api: AdminAPI
    let sessions: CallerSessions
    let directory: TemporaryDirectory

    init() throws {
        let logger = Logger(label: "per-caller-admin")
        self.directory = try TemporaryDirectory()
        let token = try self.directory.write("shared-static-token-66\n", to: "token")
        let endpoint = FakeTokenEndpoint { request, _ in
            let form = String(decoding: request.body ?? [], as: UTF8.self)
            let user = form.split(separator: "&").first { $0.hasPrefix("username=") }?.dropFirst("username=".count)
            return FakeTokenEndpoint.tokens(access: "at-\(user ?? "refresh")", refresh: "rt-\(user ?? "x")")
        }
        let stores = MemoryStores()
        let source = OAuth2Source(
            settings: .init(endpoint: .tokenURL("https://auth.example/token"), clientID: "app", clientSecret: nil)
        )
        self.sessions = CallerSessions(
            session: "api",
            limits: .init(),
            policy: RefreshPolicy(),
            logger: logger
        ) { uid, create, policy in
            guard let store = stores.store(uid, create: create) else { return nil }
            return TokenManager(source: source, transport: endpoint, store: store, policy: policy, logger: logger)
        }
        let listed: Set<UInt32> = [Self.alice.uid, Self.bob.uid]
        self.api = AdminAPI(
            sessions: SessionDirectory([
                ("api", .perCaller(self.sessions, admits: { listed.contains($0.uid) })),
                ("shared", .staticToken(try StaticTokenProvider(path: token, logger: logger), path: token)),
            ]),
            named: true,
            logger: logger,
            reload: { .applied(restartPending: []) }
        )
    }

    final class MemoryStores: Sendable {
        private let stores = Mutex<[UInt32: MemoryTokenStore]>([:])
        func store(_ uid: UInt32, create: Bool) -> MemoryTokenStore? {
            self.stores.withLock { stores in
                if stores[uid] == nil && create { stores[uid] = MemoryTokenStore() }
                return stores[uid]
            }
        }
    }

    func call(
        _ method: HTTPMethod,
        _ path: String,
        as caller: Caller,
        body: String = ""
    ) async -> (status: HTTPResponseStatus, body: String) {
        let answer = await self.api.respond(method: method, path: path, body: Data(body.utf8), asker: .peer(caller))
        return (answer.status, String(decoding: answer.body, as: UTF8.self))
    }

    func logIn(_ caller: Caller, as user: String) async -> (status: HTTPResponseStatus, body: String) {
        await self.call(
            .POST,
            "/v1/login?session=api",
            as: caller,
            body: #"{"method":"password","username":"\#(user)","password":"pw"}"#
        )
    }

    @Test func eachUserLogsInAndReadsOnlyTheirOwn() async throws {
        #expect(await self.logIn(Self.alice, as: "alice").status == .ok)
        #expect(await self.logIn(Self.bob, as: "bob").status == .ok)
        let aliceToken = await self.call(.GET, "/v1/token?session=api", as: Self.alice)
        #expect(aliceToken.status == .ok && aliceToken.body.contains("at-alice") && !aliceToken.body.contains("at-bob"))
        let bobStatus = await self.call(.GET, "/v1/status?session=api", as: Self.bob)
        #expect(bobStatus.status == .ok && bobStatus.body.contains("\"state\":\"ready\""))
        // Bob's logout is his own: Alice keeps her token.
        #expect(await self.call(.POST, "/v1/logout?session=api", as: Self.bob).status == .ok)
        #expect(await self.call(.GET, "/v1/token?session=api", as: Self.bob).status == .conflict)
        #expect(await self.call(.GET, "/v1/token?session=api", as: Self.alice).body.contains("at-alice"))
    }

    @Test func everyOtherCallIsRefusedToAUser() async throws {
        #expect(await self.logIn(Self.bob, as: "bob").status == .ok)
        let refused: [(HTTPMethod, String, Caller)] = [
            (.GET, "/v1/token?session=api&uid=\(Self.bob.uid)", Self.alice),
            (.GET, "/v1/status?session=api&uid=\(Self.bob.uid)", Self.alice),
            (.POST, "/v1/logout?session=api&uid=\(Self.bob.uid)", Self.alice),
            (.GET, "/v1/callers?session=api", Self.alice),
            (.GET, "/v1/token?session=shared", Self.alice),
            (.GET, "/v1/status?session=shared", Self.alice),
            (.GET, "/v1/sessions", Self.alice),
            (.GET, "/v1/status", Self.alice),
            (.POST, "/v1/reload", Self.alice),
            (.GET, "/metrics", Self.alice),
            (.GET, "/v1/status?session=api", Self.outsider),
            (.GET, "/v1/token?session=api", Self.outsider),
            (.POST, "/v1/logout?session=api", Self.outsider),
        ]
        for (method, path, caller) in refused {
            let answer = await self.call(method, path, as: caller)
            #expect(
                answer.status == .forbidden || answer.status == .badRequest,
                "\(method) \(path) as \(caller.uid): \(answer)"
            )
            #expect(!answer.body.contains("shared-static-token-66") && !answer.body.contains("at-bob"))
        }
        let login = await self.logIn(Self.outsider, as: "alice")
        #expect(login.status == .forbidden)
        // Nobody logs in as another uid, root neither.
        let asBob = await self.api.respond(
            method: .POST,
            path: "/v1/login?session=api&uid=\(Self.bob.uid)",
            body: Data(#"{"method":"password","username":"x","password":"pw"}"#.utf8),
            asker: .peer(Caller(uid: 0))
        )
        #expect(asBob.status == .forbidden)
        // Bob still has his session.
        #expect(await self.call(.GET, "/v1/token?session=api", as: Self.bob).body.contains("at-bob"))
    }

    @Test func rootListsAndWipesAnyUser() async throws {
        #expect(await self.logIn(Self.alice, as: "alice").status == .ok)
        let root = AdminAPI.Asker.peer(Caller(uid: 0))
        let list = await self.api.respond(method: .GET, path: "/v1/callers?session=api", body: Data(), asker: root)
        #expect(list.status == .ok && String(decoding: list.body, as: UTF8.self).contains("\"uid\":60001"))
        let wiped = await self.api.respond(
            method: .POST,
            path: "/v1/logout?session=api&uid=\(Self.alice.uid)",
            body: Data(),
            asker: root
        )
        #expect(wiped.status == .ok && String(decoding: wiped.body, as: UTF8.self).contains("\"logged_out\":true"))
        #expect(await self.call(.GET, "/v1/token?session=api", as: Self.alice).status == .conflict)
        let all = await self.api.respond(method: .GET, path: "/v1/sessions", body: Data(), asker: root)
        #expect(String(decoding: all.body, as: UTF8.self).contains("per_caller"))
    }
}
