import BearerdTestSupport
import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import Synchronization
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A `per_caller` session used by real local users at once: two users made by the test and root,
/// each logged in as a different subject at the tests' identity provider (JWT access tokens,
/// rotating refresh tokens), call one listener under keep-alive load. The upstream reads each
/// token's subject and the client says who it is: a token that crossed users is a wrong answer.
/// Across a reload and one user's logout; a listed user who never logged in gets the 503 and the
/// upstream sees nothing of theirs; each admin call a user may not make is refused.
@Suite(
    "A session per local user",
    .serialized,
    .enabled(if: ProcessInfo.processInfo.environment["BEARERD_SKIP_E2E"] == nil && getuid() == 0),
    .timeLimit(.minutes(3))
)
struct PerCallerEndToEndTests {
    static let duration = 24.0

    /// A local account made for the test, removed after it.
    struct Account {
        let name: String
        let uid: UInt32
        let gid: UInt32

        static func make(_ name: String) async throws -> Account {
            _ = try? await Self.run("/usr/sbin/userdel", [name])
            let made = try await Self.run(
                "/usr/sbin/useradd",
                ["--system", "--no-create-home", "--shell", "/usr/sbin/nologin", name]
            )
            #expect(made.status == 0, "useradd \(name): \(made.stderr)")
            guard let entry = getpwnam(name) else { throw TestFailure("no account \(name) after useradd") }
            return Account(name: name, uid: entry.pointee.pw_uid, gid: entry.pointee.pw_gid)
        }

        func remove() async { _ = try? await Self.run("/usr/sbin/userdel", [self.name]) }

        /// `program arguments` run as this account.
        func asUser(_ program: String, _ arguments: [String]) -> [String] {
            ["--reuid", String(self.uid), "--regid", String(self.gid), "--init-groups", program] + arguments
        }

        static func run(
            _ program: String,
            _ arguments: [String],
            input: String? = nil
        ) async throws -> (
            status: Int32, stdout: String, stderr: String
        ) {
            let process = try BearerdProcess(program: program, arguments, input: input)
            let status = try await process.wait()
            return (status, process.stdout, process.stderr)
        }
    }

    struct TestFailure: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }

    @Test func usersUnderLoadEachGetOnlyTheirOwnToken() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 2)
        let directory = try TemporaryDirectory()
        // Other users read the config, the client script and the program here, nothing else.
        chmod(directory.path, 0o755)
        let idp = try await IdentityProvider.start(ttl: 4, jwt: true)
        let seen = Seen()
        let upstream = try await TestUpstream.start(group: group) { request in
            let caller = request.head.headers["x-caller"].first ?? "-"
            let authorization = request.head.headers["authorization"].first ?? ""
            let claims = Self.claims(authorization)
            seen.record(caller: caller, expired: (claims.exp ?? 0) < Int(Date().timeIntervalSince1970))
            return .ok(claims.sub ?? "no subject")
        }
        var accounts: [Account] = []
        do {
            for name in ["bdpc-alice", "bdpc-bob", "bdpc-never", "bdpc-out"] { accounts.append(try await .make(name)) }
            try await self.exercise(
                idp: idp,
                upstream: upstream,
                seen: seen,
                accounts: accounts,
                directory: directory
            )
        } catch {
            for account in accounts { await account.remove() }
            try? await idp.stop()
            await upstream.stop()
            try? await group.shutdownGracefully()
            throw error
        }
        for account in accounts { await account.remove() }
        try await idp.stop()
        await upstream.stop()
        try await group.shutdownGracefully()
    }

    func exercise(
        idp: IdentityProvider,
        upstream: TestUpstream,
        seen: Seen,
        accounts: [Account],
        directory: TemporaryDirectory
    ) async throws {
        let (alice, bob, never, outsider) = (accounts[0], accounts[1], accounts[2], accounts[3])
        let program = directory.path + "/bearerd"
        try FileManager.default.copyItem(atPath: BearerdProcess.executable, toPath: program)
        chmod(program, 0o755)
        let keygen = try await BearerdProcess.run(["keygen", "--out", directory.path + "/store.key"])
        #expect(keygen.status == 0, "\(keygen.stderr)")
        let state = directory.path + "/state"
        try FileManager.default.createDirectory(atPath: state, withIntermediateDirectories: false)
        chmod(state, 0o700)
        let port = try FreePort.pick()
        let sharedPort = try FreePort.pick()
        let secret = try directory.write("secret-pass\n", to: "secret")
        let staticToken = "the-shared-session-static-token-31"
        let staticFile = try directory.write(staticToken + "\n", to: "static-token")
        func config(tokenWait: String) -> String {
            """
            admin:
              socket: \(directory.path)/run/admin.sock
            log:
              access: false
            sessions:
              api:
                per_caller: true
                listen: ["127.0.0.1:\(port)"]
                socket_allow_uids: [root, \(alice.name), \(bob.name), \(never.name)]
                upstream:
                  url: http://127.0.0.1:\(upstream.port)
                auth:
                  token_url: \(idp.tokenURL)
                  client_id: secret-client
                  client_secret_file: \(secret)
                store:
                  path: \(state)/api.store
                  key_file: \(directory.path)/store.key
                proxy:
                  token_wait: \(tokenWait)
              shared:
                listen: ["127.0.0.1:\(sharedPort)"]
                upstream:
                  url: http://127.0.0.1:\(upstream.port)
                auth:
                  static_token_file: \(staticFile)
            """
        }
        let configPath = try directory.write(config(tokenWait: "10s"), to: "bearerd.yaml", mode: 0o644)
        let client = try directory.write(Self.clientScript, to: "client.py", mode: 0o644)
        let bearerd = try BearerdProcess(program: program, ["serve", "--config", configPath])
        try await bearerd.waitUntilReady()
        func bearerdAs(
            _ account: Account?,
            _ arguments: [String],
            input: String? = nil
        ) async throws -> (
            status: Int32, stdout: String, stderr: String
        ) {
            let full = arguments + ["--config", configPath]
            guard let account else { return try await Account.run(program, full, input: input) }
            return try await Account.run("/usr/bin/setpriv", account.asUser(program, full), input: input)
        }

        // Each logs in as themselves, a subject of their own; root as carol.
        for (account, user) in [(alice, "alice"), (bob, "bob"), (nil, "carol")] as [(Account?, String)] {
            let login = try await bearerdAs(
                account,
                ["login", "--session", "api", "--username", user, "--password-stdin"],
                input: "\(user)-pass\n"
            )
            #expect(login.status == 0 && login.stdout.contains("as \(user)"), "\(user): \(login.stdout)\(login.stderr)")
        }
        // Each store is the uid's own, the daemon's, mode 0600.
        for uid in [alice.uid, bob.uid, 0] {
            var info = stat()
            #expect(
                stat("\(state)/api.uid-\(uid).store", &info) == 0 && info.st_mode & 0o777 == 0o600 && info.st_uid == 0
            )
        }

        // What a user may not do: another user's tokens, the shared session, the daemon's calls.
        let refusals: [(Account, [String])] = [
            (alice, ["token", "--session", "shared"]),
            (alice, ["status", "--session", "shared"]),
            (alice, ["reload"]),
            (alice, ["status", "--session", "api", "--users"]),
            (alice, ["status", "--session", "api", "--uid", String(bob.uid)]),
            (alice, ["logout", "--session", "api", "--uid", String(bob.uid)]),
            (outsider, ["status", "--session", "api"]),
            (outsider, ["login", "--session", "api", "--username", "alice", "--password-stdin"]),
        ]
        for (account, arguments) in refusals {
            let refused = try await bearerdAs(account, arguments, input: "alice-pass\n")
            #expect(refused.status != 0, "\(account.name) \(arguments): \(refused.stdout)")
            #expect(!refused.stdout.contains(staticToken) && !refused.stdout.contains("eyJ"), "\(refused.stdout)")
        }
        // A user holds at most four admin connections at once; the rest are closed at accept.
        let held = try directory.write(Self.holdScript, to: "hold.py", mode: 0o644)
        let holding = try await Account.run(
            "/usr/bin/setpriv",
            outsider.asUser("/usr/bin/python3", [held, directory.path + "/run/admin.sock", "6"])
        )
        #expect(holding.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "open 4 closed 2", "\(holding)")
        // What a user may do: their own status and token.
        let own = try await bearerdAs(alice, ["status", "--session", "api"])
        #expect(own.status == 0 && own.stdout.contains("alice"), "\(own.stdout)\(own.stderr)")
        let token = try await bearerdAs(alice, ["token", "--session", "api"])
        #expect(Self.claims("Bearer " + token.stdout.trimmingCharacters(in: .whitespacesAndNewlines)).sub == "alice")

        // Load: each user's client says who it is; the upstream answers with the token's subject.
        let clients: [(who: String, account: Account?)] = [
            ("alice", alice), ("bob", bob), ("carol", nil), ("never", never),
        ]
        let started = ContinuousClock.now
        let results = try await withThrowingTaskGroup(of: (String, ClientCounts?).self) { tasks in
            for (who, account) in clients {
                tasks.addTask {
                    let arguments = [client, String(port), who, String(Self.duration)]
                    let process =
                        if let account {
                            try BearerdProcess(
                                program: "/usr/bin/setpriv",
                                account.asUser("/usr/bin/python3", arguments)
                            )
                        } else {
                            try BearerdProcess(program: "/usr/bin/python3", arguments)
                        }
                    _ = try await process.wait(limit: .seconds(Self.duration + 30))
                    let counts = try? JSONDecoder().decode(ClientCounts.self, from: Data(process.stdout.utf8))
                    if counts == nil { Self.log("\(who)'s client: \(process.stdout)\(process.stderr)") }
                    return (who, counts)
                }
            }
            tasks.addTask {
                // A reload that changes the session's proxy settings, a third of the way in.
                try await Task.sleep(until: started + .seconds(Self.duration / 3))
                _ = try directory.write(config(tokenWait: "9s"), to: "bearerd.yaml", mode: 0o644)
                let reload = try await bearerdAs(nil, ["reload"])
                #expect(reload.status == 0, "reload: \(reload.stdout)\(reload.stderr)")
                return ("reload", nil)
            }
            tasks.addTask {
                // Bob logs out half way: his requests get the 503 from then on, nobody else's token.
                try await Task.sleep(until: started + .seconds(Self.duration / 2))
                let logout = try await bearerdAs(bob, ["logout", "--session", "api"])
                #expect(logout.status == 0, "logout: \(logout.stdout)\(logout.stderr)")
                return ("logout", nil)
            }
            var results: [String: ClientCounts] = [:]
            for try await (who, counts) in tasks { if let counts { results[who] = counts } }
            return results
        }
        let none = ClientCounts(right: -1, wrong: -1, refused: -1, other: -1, first_wrong: "", last_refusal: "")
        func counts(_ who: String) -> ClientCounts { results[who] ?? none }
        Self.log("clients: \(results)")
        for who in ["alice", "bob", "carol"] {
            #expect(counts(who).wrong == 0, "\(who): \(counts(who).wrong) crossings, first \(counts(who).first_wrong)")
            #expect(counts(who).right > 0, "\(who): \(counts(who))")
        }
        let total = ["alice", "bob", "carol"].map { counts($0).right }.reduce(0, +)
        #expect(total >= 10_000, "only \(total) answers in \(Self.duration) s")
        // Bob, after his logout: refused, never served with another's token.
        #expect(counts("bob").refused > 0, "bob was served after his logout: \(counts("bob"))")
        #expect(counts("alice").refused == 0 && counts("carol").refused == 0, "\(results)")
        // Never logged in: the 503 that says what to run; the upstream saw nothing of theirs.
        let never_ = counts("never")
        #expect(never_.right == 0 && never_.wrong == 0 && never_.refused > 0, "\(never_)")
        #expect(never_.last_refusal.contains("bearerd login --session api"), "\(never_.last_refusal)")
        #expect(
            seen.count("never") == 0 && seen.expired() == 0,
            "never: \(seen.count("never")), expired: \(seen.expired())"
        )
        // Each user refreshed on their own (4 s tokens).
        let refreshes = idp.marks.filter { $0.hasPrefix("refresh_token ok") }.count
        #expect(refreshes >= 6, "refreshes: \(refreshes) in \(Self.duration) s of 4 s tokens for three users")

        // Root lists and reads any user's state.
        let users = try await bearerdAs(nil, ["status", "--session", "api", "--users"])
        #expect(
            users.status == 0 && users.stdout.contains("uid \(alice.uid)") && users.stdout.contains("uid \(bob.uid)")
        )
        let aliceStatus = try await bearerdAs(nil, ["status", "--session", "api", "--uid", String(alice.uid)])
        #expect(aliceStatus.stdout.contains("alice"), "\(aliceStatus.stdout)")
        #expect(!bearerd.stderr.contains("eyJ") && !bearerd.stderr.contains(staticToken))
        bearerd.signal(SIGTERM)
        #expect(try await bearerd.wait() == 0, "\(bearerd.stderr)")
    }

    /// The subject and expiry of a JWT bearer token (not verified: the test reads whose it is).
    static func claims(_ authorization: String) -> (sub: String?, exp: Int?) {
        guard authorization.hasPrefix("Bearer ") else { return (nil, nil) }
        let parts = authorization.dropFirst("Bearer ".count).split(separator: ".")
        guard parts.count == 3 else { return (nil, nil) }
        var text = parts[1].replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while text.count % 4 != 0 { text += "=" }
        guard let data = Data(base64Encoded: text),
            let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any]
        else { return (nil, nil) }
        return (object["sub"] as? String, object["exp"] as? Int)
    }

    /// What one client counted.
    struct ClientCounts: Decodable, Sendable {
        let right: Int
        let wrong: Int
        let refused: Int
        let other: Int
        let first_wrong: String
        let last_refusal: String
    }

    /// What the upstream saw, by the caller each client says it is.
    final class Seen: Sendable {
        private let state = Mutex<(byCaller: [String: Int], expired: Int)>(([:], 0))
        func record(caller: String, expired: Bool) {
            self.state.withLock {
                $0.byCaller[caller, default: 0] += 1
                if expired { $0.expired += 1 }
            }
        }
        func count(_ caller: String) -> Int { self.state.withLock { $0.byCaller[caller] ?? 0 } }
        func expired() -> Int { self.state.withLock { $0.expired } }
    }

    /// One keep-alive client: `client.py PORT WHO SECONDS` prints its counts as JSON. Right: the
    /// answer names WHO's subject; wrong: another's; refused: bearerd's 503.
    static let clientScript = #"""
        import http.client, json, sys, time
        port, who, seconds = int(sys.argv[1]), sys.argv[2], float(sys.argv[3])
        counts = {"right": 0, "wrong": 0, "refused": 0, "other": 0}
        first_wrong, last_refusal = "", ""
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=20)
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            try:
                connection.request("GET", "/who", headers={"X-Caller": who})
                answer = connection.getresponse()
                body = answer.read().decode()
            except Exception as error:
                counts["other"] += 1
                connection.close()
                connection = http.client.HTTPConnection("127.0.0.1", port, timeout=20)
                time.sleep(0.05)
                continue
            if answer.status == 200 and body == who:
                counts["right"] += 1
            elif answer.status == 200:
                counts["wrong"] += 1
                first_wrong = first_wrong or body
            elif answer.status == 503:
                counts["refused"] += 1
                last_refusal = body
                time.sleep(0.01)
            else:
                counts["other"] += 1
        counts["first_wrong"] = first_wrong
        counts["last_refusal"] = last_refusal
        print(json.dumps(counts))
        """#

    /// `hold.py SOCKET N`: opens N connections to the admin socket, and says how many the
    /// daemon closed at once.
    static let holdScript = #"""
        import socket, sys, time
        path, count = sys.argv[1], int(sys.argv[2])
        held = []
        for _ in range(count):
            connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            connection.connect(path)
            held.append(connection)
        time.sleep(0.5)
        closed = 0
        for connection in held:
            connection.setblocking(False)
            try:
                closed += connection.recv(1) == b""
            except BlockingIOError:
                pass
        print(f"open {count - closed} closed {closed}")
        """#

    static func log(_ text: String) {
        FileHandle.standardError.write(Data("per caller: \(text)\n".utf8))
    }
}
