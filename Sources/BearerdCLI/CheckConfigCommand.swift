import ArgumentParser
import BearerdAuth
import BearerdConfig
import BearerdProxy
import BearerdStore
import BearerdTokens
import Logging

/// `bearerd check-config`: validates the config file (and the files it names) without serving.
struct CheckConfigCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "check-config",
        abstract: "Check the config file and print OK or every problem found.",
        discussion: """
            Reads the file and the BEARERD_* environment overrides exactly as `serve` would, \
            checks every key, opens the files it names (CA bundle, token file), and checks what \
            `serve` checks before it binds: the store key (length and mode) against the token \
            store, the store's mode and profile, the directories of the admin socket and unix \
            listeners, and what another program holds that `serve` needs (a port of listen or \
            metrics.listen, the store, the admin socket; a bearerd serving this same file holds \
            them rightly; --skip-held leaves this out). Changes nothing. Exits 0 and prints OK when `serve` would start; otherwise \
            prints one line per problem, each naming its key, and exits 1.
            """
    )

    @OptionGroup var options: ConfigOption

    @Flag(
        name: .customLong("skip-held"),
        help: ArgumentHelp(
            "Check the file and the files it names, not what other programs hold.",
            discussion:
                "For a copy checked before it replaces the running config (Ansible's validate:): its ports, store and admin socket are the running daemon's."
        )
    )
    var skipHeld = false

    func run() async throws {
        switch Startup.prepareSessions(
            configPath: self.options.path,
            logger: Logger(label: "bearerd.check-config"),
            environment: self.options.environment
        ) {
        case .success(let sessions):
            var found: [(session: String, findings: StoreCheck.Findings)] = []
            for prepared in sessions {
                var own = StartupChecks.run(prepared.configuration)
                if !self.skipHeld {
                    let held = HeldResources.findings(prepared.configuration, configPath: self.options.path)
                    own.errors += held.errors
                    own.notes += held.notes
                }
                found.append((prepared.session, own))
            }
            let findings = Self.merged(found, named: sessions[0].named)
            guard findings.errors.isEmpty else {
                let count = findings.errors.count
                StandardError.emit(
                    "bearerd: \(self.options.path) has \(count) problem\(count == 1 ? "" : "s"):\n"
                        + findings.errors.map { "  \(PrintableText.escaped("\($0)"))" }.joined(separator: "\n")
                )
                throw ExitCode.failure
            }
            for note in findings.notes { print("note: \(PrintableText.escaped(note))") }
            for prepared in sessions {
                if prepared.named {
                    print(
                        "session \(prepared.session): \(prepared.configuration.listen.map { "\($0)" }.joined(separator: ", ")) → \(prepared.settings.upstream.target)"
                    )
                }
                try await Self.reportDiscovery(prepared)
            }
            print("OK")
        case .failure(let failure):
            // One problem a line; each line's quoted values shown as they are, not acted on.
            let lines = failure.message.split(separator: "\n", omittingEmptySubsequences: false)
            StandardError.emit("bearerd: " + lines.map { PrintableText.escaped(String($0)) }.joined(separator: "\n"))
            throw ExitCode.failure
        }
    }

    /// Each session's findings, said of it; one that every session has (the daemon's: its admin
    /// socket, a key they share) once, as of the config.
    static func merged(
        _ found: [(session: String, findings: StoreCheck.Findings)],
        named: Bool
    ) -> StoreCheck.Findings {
        var merged = StoreCheck.Findings()
        func add(_ texts: KeyPath<StoreCheck.Findings, [String]>, into target: inout [String]) {
            for (session, findings) in found {
                for text in findings[keyPath: texts] {
                    let everywhere = found.allSatisfy { $0.findings[keyPath: texts].contains(text) }
                    let said = named && !everywhere ? "session \(session): \(text)" : text
                    if !target.contains(said) { target.append(said) }
                }
            }
        }
        add(\.errors, into: &merged.errors)
        add(\.notes, into: &merged.notes)
        return merged
    }

    /// With `auth.issuer`: which endpoint was found in which metadata document. A document that
    /// names no token endpoint, or whose issuer is another, is a problem; an issuer that cannot
    /// be reached now is a note, since `serve` starts anyway and retries.
    private static func reportDiscovery(_ prepared: Prepared) async throws {
        do {
            switch try await Startup.discover(prepared, logger: Logger(label: "bearerd.check-config")) {
            case .notNeeded: break
            case .found(let endpoints):
                let key = prepared.configuration.auth.oauth2?.discover == true ? "auth.discover" : "auth.issuer"
                for endpoint in endpoints {
                    print(
                        PrintableText.escaped(
                            "\(key): \(endpoint.endpoint) \(endpoint.url) (from \(endpoint.document))"
                        )
                    )
                }
            case .unreachable(let why):
                print("note: \(PrintableText.escaped("\(why)")); the endpoints were not checked")
            }
        } catch {
            StandardError.emit("bearerd: \(error.message)")
            throw ExitCode.failure
        }
    }
}
