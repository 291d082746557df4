import BearerdAdmin
import BearerdAuth
import BearerdConfig
import BearerdFiles
import BearerdProxy
import BearerdSockets
import BearerdStore
import BearerdTokens
import Foundation
import Logging

#if canImport(Glibc)
import Glibc
#endif

/// Picks how a CLI verb reaches the engine: the daemon when one answers on `admin.socket`,
/// otherwise the store directly, under the same lock a daemon takes.
enum SessionAccess {
    /// `session`: `--session NAME`; `nil` for the config's only session.
    static func open(
        _ options: ConfigOption,
        session: String? = nil
    ) async throws -> (any AdminChannel, BearerdConfiguration) {
        let logger = Self.quietLogger
        // The daemon first, from the config as its user reads it: a user of a per_caller session
        // talks to the daemon and need not (and may not) read the daemon's secret files.
        if let (entry, name) = try? Self.entry(options, session: session),
            let daemon = try Self.daemon(socket: entry.admin.socket, storePath: entry.store.path, session: name)
        {
            return (daemon, entry)
        }
        let prepared: Prepared
        switch Startup.prepare(
            configPath: options.path,
            session: session,
            logger: logger,
            environment: options.environment
        ) {
        case .success(let value): prepared = value
        case .failure(let failure): throw failure
        }
        let configuration = prepared.configuration
        if let daemon = try Self.daemon(
            socket: configuration.admin.socket,
            storePath: configuration.store.path,
            session: prepared.named ? prepared.session : nil
        ) {
            return (daemon, configuration)
        }
        return (try await Self.inProcess(prepared, logger: logger), configuration)
    }

    /// The session's config as read without checking the files it names, and its name when the
    /// config has `sessions:`. Throws when it cannot be read or names no such session.
    private static func entry(
        _ options: ConfigOption,
        session: String?
    ) throws -> (BearerdConfiguration, name: String?) {
        var loader = ConfigLoader(environment: options.environment)
        loader.checksFiles = false
        let sessions = try loader.loadSessions(path: options.path)
        guard
            let entry = session.map({ name in sessions.entries.first { $0.name == name } })
                ?? (sessions.entries.count == 1 ? sessions.entries.first : nil)
        else { throw CommandError("no such session") }
        return (entry.configuration, sessions.isNamed ? entry.name : nil)
    }

    /// Errors only: what a verb did or why it failed is its own output.
    static var quietLogger: Logger {
        Logger(label: "bearerd") { label in LogfmtLogHandler(label: label, level: .error, journald: false) }
    }

    /// The running daemon, and only it: `nil` when none answers on `socket` (`admin.socket`).
    /// `storePath` (`store.path`) names the daemon's account, which the socket must belong to.
    /// `session`: the session every call is for, in a config with `sessions:`.
    static func daemon(socket: String, storePath: String, session: String? = nil) throws -> (any AdminChannel)? {
        let trust = SocketTrust(storePath: storePath)
        if let problem = trust.problem(socket) {
            throw CommandError("bearerd does not talk to the admin socket: \(problem)")
        }
        switch UnixSocketFile.connectError(socket) {
        case 0:
            return SocketAdminChannel(socket: socket, trust: trust, session: session)
        case EACCES, EPERM:
            throw CommandError(
                "the admin socket \(socket) is not yours to use: run this as the daemon's user (or root)"
            )
        default:
            return nil
        }
    }

    /// The engine in this process, on the store under its lock.
    private static func inProcess(_ prepared: Prepared, logger: Logger) async throws -> any AdminChannel {
        let socket = prepared.configuration.admin.socket
        if prepared.configuration.callers.enabled {
            throw CommandError(
                "no daemon answers on \(socket), and this session is per_caller: each user's tokens are the daemon's to keep, so start `bearerd serve` (or the service) first"
            )
        }
        if case .engine = prepared.tokens, !prepared.configuration.store.isEncryptedOnDisk {
            throw CommandError(
                "no daemon answers on \(socket), and this config keeps tokens in memory only (no store.key_file or store.passphrase_file): start `bearerd serve` first, or configure a store key"
            )
        }
        let engine: TokenEngine
        do {
            engine = try TokenEngine.make(prepared, logger: logger)
        } catch let error as StoreError where error.code == .inUse {
            throw CommandError(
                "\(error.holder ?? "the token store is in use"), but no daemon answers on the admin socket \(socket): check that this command and the daemon use the same config (admin.socket)"
            )
        } catch let failure as CommandError {
            throw failure
        } catch {
            throw CommandError("\(error)", code: .config, underlying: error)
        }
        let pool = await engine.startInProcess(logger: logger)
        return InProcessAdminChannel(api: AdminAPI(backend: engine.backend, logger: logger)) {
            await engine.close()
            pool?.cancel()
            await pool?.value
        }
    }
}
