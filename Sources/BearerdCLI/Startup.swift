import BearerdAuth
import BearerdConfig
import BearerdProxy
import BearerdTokens
import Foundation
import Logging

/// What `serve` needs, built and checked before anything listens.
struct Prepared {
    /// The session's name (`default` for a config without `sessions:`), and whether the config
    /// names its sessions (`sessions:`): then every admin call names the one it is for.
    var session = ConfiguredSessions.defaultName
    var named = false
    var configuration: BearerdConfiguration
    var settings: ProxySettings
    var tokens: TokenPlan
    /// The wall clock (JOSE, platform token files), the token engine's steady clock, and the
    /// clocks the engine watches for a suspend or a step.
    var clock: any TokenClock
    var engineClock: any TokenClock
    var clocks: any ClockSource
}

/// The steps `serve` and `check-config` share.
enum Startup {
    /// Every session of the config at `configPath`, each built and checked.
    static func prepareSessions(
        configPath: String,
        logger: Logger,
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) -> Result<[Prepared], CommandError> {
        let sessions: ConfiguredSessions
        do {
            sessions = try ConfigLoader(environment: environment).loadSessions(path: configPath)
        } catch {
            let count = error.issues.count
            let lines = error.issues.map { "  \($0)" }.joined(separator: "\n")
            return .failure(
                CommandError(
                    keys: error.issues.map(\.key),
                    message: "\(configPath) has \(count) problem\(count == 1 ? "" : "s"):\n\(lines)"
                )
            )
        }
        let clocks = TestClock.make(environment: environment, logger: logger)
        var prepared: [Prepared] = []
        for entry in sessions.entries {
            let prefix = sessions.isNamed ? "sessions.\(entry.name)." : ""
            do {
                var settings = try ProxySettings(configuration: entry.configuration)
                let tokens = try TokenPlan.make(entry.configuration.auth, clock: clocks.wall, logger: logger)
                if case .engine(_, _, _, _, _, let dpop?) = tokens { settings.dpop = DPoPUpstream(prover: dpop) }
                if sessions.isNamed { settings.session = entry.name }
                prepared.append(
                    Prepared(
                        session: entry.name,
                        named: sessions.isNamed,
                        configuration: entry.configuration,
                        settings: settings,
                        tokens: tokens,
                        clock: clocks.wall,
                        engineClock: clocks.engine,
                        clocks: clocks.clocks
                    )
                )
            } catch let error as CommandError {
                let where_ = sessions.isNamed ? " (session \(entry.name))" : ""
                return .failure(
                    CommandError(
                        keys: error.keys.map { prefix + $0 },
                        message: "\(configPath)\(where_): \(error.message)"
                    )
                )
            } catch {
                return .failure(CommandError(keys: [], message: "\(configPath): \(error)"))
            }
        }
        return .success(prepared)
    }

    /// The session `session` names (`nil`: the config's only one).
    static func prepare(
        configPath: String,
        session: String? = nil,
        logger: Logger,
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) -> Result<Prepared, CommandError> {
        Self.prepareSessions(configPath: configPath, logger: logger, environment: environment).flatMap { all in
            Self.pick(session, from: all, configPath: configPath)
        }
    }

    /// The session named `name`, or the only one when `name` is `nil`.
    static func pick(_ name: String?, from all: [Prepared], configPath: String) -> Result<Prepared, CommandError> {
        let names = all.map(\.session).joined(separator: ", ")
        if let name {
            guard let found = all.first(where: { $0.session == name }) else {
                return .failure(CommandError("\(configPath) has no session \(name): its sessions are \(names)"))
            }
            return .success(found)
        }
        guard all.count == 1 else {
            return .failure(
                CommandError("\(configPath) has several sessions (\(names)): name one with --session NAME")
            )
        }
        return .success(all[0])
    }
}
