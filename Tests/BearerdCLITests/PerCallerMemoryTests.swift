import BearerdAuth
import BearerdStore
import BearerdTestSupport
import BearerdTokens
import Foundation
import Logging
import Testing

@testable import BearerdCLI

#if canImport(Glibc)
import Glibc
#endif

/// What an idle user's session costs in memory: a thousand users of a per_caller session, each
/// with a store file that holds a valid token, loaded as the daemon loads them (its engine, its
/// encrypted store under its lock, its refresh timer), then unloaded by the limit.
@Suite("memory of idle per_caller users", .serialized)
struct PerCallerMemoryTests {
    static let users: UInt32 = 1000

    @Test func aThousandIdleUsersCostLittleAndTheLimitUnloadsThem() async throws {
        let directory = try TemporaryDirectory()
        let logger = Logger(label: "per-caller-memory") { _ in SwiftLogNoOpLogHandler() }
        let key = directory.path + "/store.key"
        let keygen = try await BearerdProcess.run(["keygen", "--out", key])
        #expect(keygen.status == 0, "\(keygen.stderr)")
        let config = try directory.write(
            """
            per_caller: true
            listen: ["127.0.0.1:1"]
            admin:
              socket: \(directory.path)/admin.sock
            upstream:
              url: http://127.0.0.1:1
            auth:
              token_url: http://127.0.0.1:1/token
              client_id: app
              client_auth: none
            store:
              path: \(directory.path)/api.store
              key_file: \(key)
            callers:
              max_loaded: \(Self.users)
            """,
            to: "bearerd.yaml"
        )
        guard case .success(let prepared) = Startup.prepare(configPath: config, logger: logger, environment: [:]) else {
            Issue.record("the config did not load")
            return
        }
        let far = Date().addingTimeInterval(86_400)
        for uid in 1...Self.users {
            let store = try EncryptedTokenStore(
                path: CallerStores.path(beside: directory.path + "/api.store", uid: uid),
                key: .keyFile(key),
                profile: "default.uid-\(uid)"
            )
            try store.save(
                StoredTokens(
                    user: StoredSession(
                        refreshToken: Secret("refresh-of-\(uid)"),
                        accessToken: BearerToken("access-of-\(uid)"),
                        accessExpiresAt: far,
                        receivedAt: Date()
                    )
                )
            )
            store.close()
        }
        let engine = try TokenEngine.make(prepared, logger: logger)
        guard case .perCaller(let sessions, _) = engine else {
            Issue.record("not a per_caller engine")
            await engine.close()
            return
        }
        do {
            try await self.measure(sessions, key: key, directory: directory)
        } catch {
            await engine.close()
            throw error
        }
        await engine.close()
    }

    /// This process's CPU time (user and system), in seconds.
    static func processCPU() -> Double {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec)
            + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1_000_000
    }

    func measure(_ sessions: CallerSessions, key: String, directory: TemporaryDirectory) async throws {
        let before = residentSetSize()
        for uid in 1...Self.users {
            let manager = try #require(try await sessions.manager(for: uid))
            #expect(manager.currentToken()?.value == "access-of-\(uid)")
        }
        let after = residentSetSize()
        let perUser = (after - before) / Int(Self.users)
        FileHandle.standardError.write(
            Data(
                "per caller memory: \(Self.users) idle users loaded, RSS +\((after - before) / 1024) KiB, \(perUser / 1024) KiB each\n"
                    .utf8
            )
        )
        #expect(sessions.loadedCount == Int(Self.users))
        #expect(perUser < 256 * 1024, "each idle user costs \(perUser) bytes")
        // What they cost idle (each one's timer looks at the clocks every 2 s), told, not judged:
        // the process's CPU time counts every suite running beside this one.
        let (cpuBefore, wallBefore) = (Self.processCPU(), ContinuousClock.now)
        try await Task.sleep(for: .seconds(4))
        let share = (Self.processCPU() - cpuBefore) / Double((ContinuousClock.now - wallBefore).components.seconds)
        FileHandle.standardError.write(
            Data(
                "per caller idle CPU: with \(Self.users) loaded users the test process used \(Int(share * 1000)) ms of CPU a second (other suites' included when they run beside it)\n"
                    .utf8
            )
        )
        // One more user than the limit: the least recently used goes, its store closed.
        let extra = try EncryptedTokenStore(
            path: CallerStores.path(beside: directory.path + "/api.store", uid: 5000),
            key: .keyFile(key),
            profile: "default.uid-5000"
        )
        try extra.save(StoredTokens(refreshToken: Secret("refresh-of-5000")))
        extra.close()
        _ = try await sessions.manager(for: 5000)
        #expect(sessions.loadedCount == Int(Self.users))
        #expect(sessions.uids.count == Int(Self.users) + 1)
    }
}
