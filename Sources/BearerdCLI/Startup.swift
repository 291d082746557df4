import BearerdAuth
import BearerdConfig
import BearerdProxy
import BearerdTokens
import Foundation
import Logging

/// What `serve` needs, built and checked before anything listens.
struct Prepared {
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
    static func prepare(
        configPath: String,
        logger: Logger,
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) -> Result<Prepared, CommandError> {
        let configuration: BearerdConfiguration
        do {
            configuration = try ConfigLoader(environment: environment).load(path: configPath)
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
        do {
            var settings = try ProxySettings(configuration: configuration)
            let clocks = TestClock.make(environment: environment, logger: logger)
            let tokens = try TokenPlan.make(configuration.auth, clock: clocks.wall, logger: logger)
            if case .engine(_, _, _, _, _, let dpop?) = tokens { settings.dpop = DPoPUpstream(prover: dpop) }
            return .success(
                Prepared(
                    configuration: configuration,
                    settings: settings,
                    tokens: tokens,
                    clock: clocks.wall,
                    engineClock: clocks.engine,
                    clocks: clocks.clocks
                )
            )
        } catch let error as CommandError {
            return .failure(CommandError(keys: error.keys, message: "\(configPath): \(error.message)"))
        } catch {
            return .failure(CommandError(keys: [], message: "\(configPath): \(error)"))
        }
    }
}
