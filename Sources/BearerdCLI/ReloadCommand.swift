import ArgumentParser
import BearerdAdmin
import BearerdConfig
import NIOHTTP1

/// `bearerd reload`: asks the running daemon to read its config again and says how it went,
/// so that systemd's `ExecReload=` (and a person) learns whether the new config is live.
struct ReloadCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "reload",
        abstract: "Make the running daemon read its config again; fail if it refuses the new one.",
        discussion: """
            Returns once the new config is live (exit 0) or refused (exit 78 for errors in the \
            config, 1 for anything else, the reason printed); a refused config leaves the running \
            one serving. When some changed keys wait for a restart (the token source, the store, \
            the threads), the first line names them, the rest is live, and the exit is 75. systemd's ExecReload= runs this, so `systemctl reload bearerd` fails \
            visibly on a broken config. The running daemon judges the config and applies it; \
            with no daemon, nothing is reloaded. SIGHUP reloads too, but says nothing back.
            """
    )

    @OptionGroup var options: ConfigOption

    func run() async throws {
        let path = self.options.path
        let environment = self.options.environment
        // Checked here first; but the daemon judges. Under systemd this process may not see what
        // the daemon sees (the credentials are the service start's own), so a config this check
        // refuses still goes to a running daemon, found through what can be read of it.
        let socket: String
        let storePath: String
        var refusedHere: CommandError?
        switch Startup.prepareSessions(configPath: path, logger: SessionAccess.quietLogger, environment: environment) {
        case .success(let sessions):
            // admin.socket is the daemon's; any session's store names the daemon's account.
            socket = sessions[0].configuration.admin.socket
            storePath = sessions[0].configuration.store.path
        case .failure(let failure):
            guard let paths = ConfigLoader(environment: environment).daemonPaths(path: path) else {
                Self.refused(failure.message)
                throw ExitCode(failure.exitCode)
            }
            (socket, storePath) = paths
            refusedHere = failure
        }
        let channel: any AdminChannel
        do {
            guard let daemon = try SessionAccess.daemon(socket: socket, storePath: storePath) else {
                if let refusedHere {
                    Self.refused(refusedHere.message)
                    throw ExitCode(refusedHere.exitCode)
                }
                StandardError.emit(
                    "bearerd: no daemon answers on \(socket) (admin.socket): nothing to reload (start it, or check that it runs this config)"
                )
                throw ExitCode.failure
            }
            channel = daemon
        } catch let failure as CommandError {
            StandardError.emit("bearerd: \(failure.message)")
            throw ExitCode(failure.exitCode)
        }
        var waiting = false
        do {
            let answer = try await channel.request(.POST, "/v1/reload", as: AdminMessages.Reloaded.self)
            await channel.close()
            if answer.restartPending.isEmpty {
                print("reloaded: the new config is live")
            } else {
                // Not "live": a person who fixed one of these keys must not think it applies.
                print(
                    "reloaded in part: \(answer.restartPending.joined(separator: ", ")) wait for a restart (the running values serve until then; `systemctl restart bearerd` applies them); the rest of the new config is live"
                )
            }
            print(
                "open connections: idle ones now serve the new config, busy ones close after their request; callers the lists no longer admit were closed"
            )
            waiting = !answer.restartPending.isEmpty
        } catch let failure as AdminMessages.Failure {
            await channel.close()
            switch failure.error {
            case "config_refused":
                Self.refused(failure.message)
                throw ExitCode(78)
            case "reload_failed":
                StandardError.emit("bearerd: \(failure.message); the running config keeps serving")
                throw ExitCode.failure
            case "reload_partly_applied":
                StandardError.emit("bearerd: reloaded in part: \(failure.message)")
                throw ExitCode.failure
            default:
                StandardError.emit("bearerd: \(failure.message)")
                throw ExitCode.failure
            }
        } catch {
            await channel.close()
            StandardError.emit("bearerd: the daemon did not answer the reload: \(error)")
            throw ExitCode.failure
        }
        // Some of it waits for a restart: not a success for systemd's ExecReload= either.
        if waiting { throw ExitCode(75) }
    }

    private static func refused(_ reason: String) {
        StandardError.emit("bearerd: the config is refused; the running one keeps serving:\n\(reason)")
    }
}
