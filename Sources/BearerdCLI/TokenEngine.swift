import BearerdAdmin
import BearerdAuth
import BearerdConfig
import BearerdFleet
import BearerdProxy
import BearerdStore
import BearerdTokens
import BearerdWire
import Logging
import Tracing

/// Where the token comes from, assembled in one place for `serve` and for the verbs that run
/// without a daemon: a static file, or the engine (its store, its HTTP client, its manager).
enum TokenEngine {
    case staticToken(StaticTokenProvider, path: String)
    case engine(
        TokenManager,
        client: HTTPClientTokenTransport,
        fleet: PostgresSessionStore?,
        commands: SpawnedCommandRunner?
    )
    /// `per_caller: true`: a manager per caller uid, each on its own store.
    case perCaller(CallerSessions, client: HTTPClientTokenTransport)

    /// Opens the store and makes the token client. Throws a ``CommandError`` (exit 78 for a
    /// config or store problem) that names what to fix; a store held by a running daemon throws
    /// ``StoreError`` with code `.inUse` for the caller to explain.
    static func make(_ prepared: Prepared, tracer: (any Tracer)? = nil, logger: Logger) throws -> TokenEngine {
        switch prepared.tokens {
        case .staticToken(let provider):
            return .staticToken(provider, path: prepared.configuration.auth.staticTokenFile ?? "")
        case .engine(let source, let seed, let policy, let transport, let verifier, let dpop):
            let configuration = prepared.configuration.store
            var fleet: PostgresSessionStore?
            if let postgres = configuration.postgres {
                do {
                    fleet = try PostgresSessionStore(
                        postgres,
                        profile: configuration.profile,
                        key: configuration.keyFile.map { .keyFile($0) }
                            ?? .passphraseFile(configuration.passphraseFile ?? ""),
                        logger: logger
                    )
                } catch {
                    throw CommandError("\(error)", code: .config, underlying: error)
                }
            }
            // The fleet's row is the store; the file store is not opened (nor locked) then.
            // A per_caller session's stores are each user's, opened when they are first needed.
            let store: any TokenStore =
                fleet == nil && !prepared.configuration.callers.enabled
                ? try Self.openStore(configuration, logger: logger) : MemoryTokenStore()
            let client: HTTPClientTokenTransport
            do {
                client = try transport.make(logger: logger)
            } catch let error as ProxyError {
                throw CommandError("cannot set up the token client: \(error)", code: .config, underlying: error)
            } catch {
                throw CommandError(
                    "cannot set up the token client (auth.ca_file): \(error)",
                    code: .config,
                    underlying: error
                )
            }
            if prepared.configuration.callers.enabled {
                return try Self.makePerCaller(
                    prepared,
                    client: client,
                    source: source,
                    verifier: verifier,
                    tracer: tracer,
                    logger: logger
                )
            }
            let commands = source is CommandSource ? SpawnedCommandRunner() : nil
            let tokenTransport: any TokenTransport =
                if let command = source as? CommandSource, let commands {
                    CommandTokenTransport(
                        settings: command.settings,
                        runner: commands,
                        record: command.record,
                        clock: prepared.engineClock
                    )
                } else {
                    dpop.map { DPoPTokenTransport(client, prover: $0) } ?? client
                }
            let manager = TokenManager(
                source: source,
                transport: tokenTransport,
                store: store,
                seed: seed,
                policy: policy,
                clock: prepared.engineClock,
                clocks: prepared.clocks,
                logger: logger,
                fleet: fleet,
                host: configuration.postgres?.hostName,
                verifier: verifier,
                proofKey: dpop,
                tracer: tracer,
                session: prepared.named ? prepared.session : nil
            )
            return .engine(manager, client: client, fleet: fleet, commands: commands)
        }
    }

    /// What the proxy asks for a token.
    var provider: any TokenProvider {
        switch self {
        case .staticToken(let provider, _): provider
        case .engine(let manager, _, _, _): manager
        case .perCaller(let sessions, _): CallerTokens(sessions: sessions)
        }
    }

    /// What a reload gives its new timing rules.
    var timing: (any RefreshTiming)? {
        switch self {
        case .staticToken: nil
        case .engine(let manager, _, _, _): manager
        case .perCaller(let sessions, _): sessions
        }
    }

    /// What the admin routes call.
    var backend: AdminAPI.Backend {
        switch self {
        case .staticToken(let provider, let path): .staticToken(provider, path: path)
        case .engine(let manager, _, _, _): .engine(manager)
        case .perCaller(let sessions, _): .perCaller(sessions, admits: { _ in false })
        }
    }

    var manager: TokenManager? {
        if case .engine(let manager, _, _, _) = self { manager } else { nil }
    }

    /// The fleet's store, with `store.backend: postgres`.
    var fleet: PostgresSessionStore? {
        if case .engine(_, _, let fleet, _) = self { fleet } else { nil }
    }

    /// For a verb run without a daemon: runs the fleet's pool until `close()` and reads the row
    /// once, so that the verb acts on the fleet's session. Returns the pool's task.
    func startInProcess(logger: Logger) async -> Task<Void, Never>? {
        guard case .engine(let manager, _, let fleet?, _) = self else { return nil }
        let pool = Task { await fleet.run() }
        await FleetService(store: fleet, manager: manager, logger: logger).sync()
        return pool
    }

    /// Waits for a refresh in flight to be stored, then closes the token client.
    func close() async {
        if case .perCaller(let sessions, let client) = self {
            await sessions.close()
            try? await client.shutdown()
            return
        }
        guard case .engine(let manager, let client, _, let commands) = self else { return }
        // An auth.command run in flight ends now, not at auth.command_timeout.
        commands?.stopAll()
        await manager.settle()
        try? await client.shutdown()
        // Its last write is done: the store's lock goes now, not when the last reference does,
        // so that a session a reload removed can be added again.
        await manager.closeStore()
    }

    /// The encrypted store when a key is configured, otherwise memory (with a warning). A store
    /// that cannot be used as it is (wrong key, modes, held by another daemon) stops the start;
    /// a damaged one has been moved aside by the store and bearerd starts logged out.
    static func openStore(_ configuration: BearerdConfiguration.Store, logger: Logger) throws -> any TokenStore {
        let key: StoreKey
        if let file = configuration.keyFile {
            key = .keyFile(file)
        } else if let file = configuration.passphraseFile {
            key = .passphraseFile(file)
        } else {
            logger.warning(
                "no store.key_file or store.passphrase_file: tokens are kept in memory only and a restart starts from auth.refresh_token_file"
            )
            return MemoryTokenStore()
        }
        let store = try EncryptedTokenStore(path: configuration.path, key: key, profile: configuration.profile)
        do {
            _ = try store.load()
        } catch let error as StoreError where error.code == .corrupted {
            logger.error("the token store is damaged; starting logged out", metadata: ["error": "\(error)"])
        }
        return store
    }
}
