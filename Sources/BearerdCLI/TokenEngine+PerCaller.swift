import BearerdConfig
import BearerdStore
import BearerdTokens
import Foundation
import Logging
import Tracing

/// A `per_caller` session's engine: one token manager per caller uid, each on its own store
/// beside `store.path` (`NAME.uid-UID.store`), all sharing the token client and the ceiling of
/// `callers.max_refreshes_per_minute`.
extension TokenEngine {
    static func makePerCaller(
        _ prepared: Prepared,
        client: HTTPClientTokenTransport,
        source: any TokenSource,
        verifier: (any TokenVerifier)?,
        tracer: (any Tracer)?,
        logger: Logger
    ) throws -> TokenEngine {
        let configuration = prepared.configuration
        let store = configuration.store
        let key: StoreKey =
            if let file = store.keyFile { .keyFile(file) } else { .passphraseFile(store.passphraseFile ?? "") }
        let callers = configuration.callers
        let ceiling = RefreshCeiling(client, limit: callers.maxRefreshesPerMinute, now: CallerSessions.bootNanoseconds)
        let base = store.path
        let profile = store.profile
        let session = prepared.named ? prepared.session : nil
        let (clock, clocks) = (prepared.engineClock, prepared.clocks)
        let sessions = CallerSessions(
            session: session,
            limits: .init(maxLoaded: callers.maxLoaded, idleUnload: callers.idleUnload),
            policy: TokenPlan.policy(configuration.auth),
            logger: logger,
            storedUIDs: { CallerStores.uids(beside: base) },
            factory: { uid, create, policy in
                let path = CallerStores.path(beside: base, uid: uid)
                if !create && !FileManager.default.fileExists(atPath: path) { return nil }
                var userLogger = logger
                userLogger[metadataKey: "caller_uid"] = "\(uid)"
                // The uid is sealed in with the tokens: a file renamed to another uid's name opens for
                // nobody.
                let file = try EncryptedTokenStore(path: path, key: key, profile: "\(profile).uid-\(uid)")
                do {
                    _ = try file.load()
                } catch let error as StoreError where error.code == .corrupted {
                    userLogger.error(
                        "this user's token store is damaged; they start logged out",
                        metadata: ["error": "\(error)"]
                    )
                }
                return TokenManager(
                    source: source,
                    transport: ceiling.forUser(uid),
                    store: file,
                    policy: policy,
                    clock: clock,
                    clocks: clocks,
                    logger: userLogger,
                    verifier: verifier,
                    tracer: tracer,
                    session: session
                )
            }
        )
        return .perCaller(sessions, client: client)
    }
}

/// Where a `per_caller` session keeps each user's store: beside `store.path`, its name made from
/// the uid alone (never from anything a caller sends).
enum CallerStores {
    /// `/var/lib/bearerd/api.store` → `/var/lib/bearerd/api.uid-1000.store`.
    static func path(beside base: String, uid: UInt32) -> String {
        "\(BearerdConfiguration.Callers.storeStem(base)).uid-\(uid).store"
    }

    /// The uids that have a store beside `base`.
    static func uids(beside base: String) -> [UInt32] {
        let directory = (base as NSString).deletingLastPathComponent
        let stem = (BearerdConfiguration.Callers.storeStem(base) as NSString).lastPathComponent
        let prefix = stem + ".uid-"
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        return names.compactMap { name in
            guard name.hasPrefix(prefix), name.hasSuffix(".store") else { return nil }
            let digits = name.dropFirst(prefix.count).dropLast(".store".count)
            guard digits.count <= 10, digits.allSatisfy(\.isASCII) else { return nil }
            return UInt32(digits)
        }.sorted()
    }
}
