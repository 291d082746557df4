import BearerdAuth
import BearerdConfig
import BearerdProxy
import Foundation
import Logging

/// What `serve` needs, built and checked before anything listens.
struct Prepared {
    var configuration: BearerdConfiguration
    var settings: ProxySettings
    var tokens: TokenPlan
}

/// Why bearerd cannot start: every problem, each with the config key at fault, as text for a
/// person (whoever prints it to a terminal puts the program's name before it) and the keys for
/// code (`check-config`'s tests, and whoever wants to point at the line).
struct StartupError: Error, CustomStringConvertible {
    /// The config keys at fault, in the order found; empty when the fault is no key's.
    var keys: [String]
    /// Every problem, for a person.
    var report: String
    var description: String { self.report }

    /// A problem with the value of `key`: the message says what is wrong and what to do.
    init(key: String, _ message: String) {
        self.keys = [key]
        self.report = "\(key): \(message)"
    }

    init(keys: [String], report: String) {
        self.keys = keys
        self.report = report
    }
}

/// The steps `serve` and `check-config` share.
enum Startup {
    static func prepare(
        configPath: String,
        logger: Logger,
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) -> Result<Prepared, StartupError> {
        let configuration: BearerdConfiguration
        do {
            configuration = try ConfigLoader(environment: environment).load(path: configPath)
        } catch {
            let count = error.issues.count
            let lines = error.issues.map { "  \($0)" }.joined(separator: "\n")
            return .failure(
                StartupError(
                    keys: error.issues.map(\.key),
                    report: "\(configPath) has \(count) problem\(count == 1 ? "" : "s"):\n\(lines)"
                )
            )
        }
        do {
            var settings = try ProxySettings(configuration: configuration)
            let tokens = try TokenPlan.make(configuration.auth, logger: logger)
            if case .engine(_, _, _, _, _, let dpop?) = tokens { settings.dpop = DPoPUpstream(prover: dpop) }
            return .success(Prepared(configuration: configuration, settings: settings, tokens: tokens))
        } catch let error as StartupError {
            return .failure(StartupError(keys: error.keys, report: "\(configPath): \(error.report)"))
        } catch {
            return .failure(StartupError(keys: [], report: "\(configPath): \(error)"))
        }
    }
}
