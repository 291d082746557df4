import ArgumentParser
import BearerdAdmin
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
            one serving. systemd's ExecReload= runs this, so `systemctl reload bearerd` fails \
            visibly on a broken config. The config file is checked here first, then by the \
            daemon, which also applies it. SIGHUP reloads too, but says nothing back.
            """
    )

    @OptionGroup var options: ConfigOption

    func run() async throws {
        let channel: any AdminChannel
        do {
            guard let daemon = try SessionAccess.daemon(self.options) else {
                StandardError.emit(
                    "bearerd: no daemon answers on this config's admin.socket: nothing to reload (start it, or check that it runs this config)"
                )
                throw ExitCode.failure
            }
            channel = daemon
        } catch let failure as CommandError {
            StandardError.emit("bearerd: the config is refused; the running one keeps serving:\n\(failure.message)")
            throw ExitCode(failure.exitCode)
        }
        do {
            let answer = try await channel.request(.POST, "/v1/reload", as: AdminMessages.Reloaded.self)
            await channel.close()
            if answer.restartPending.isEmpty {
                print("reloaded: the new config is live")
            } else {
                print(
                    "reloaded: the new config is live, but these keys take effect at the next restart: \(answer.restartPending.joined(separator: ", "))"
                )
            }
        } catch let failure as AdminMessages.Failure {
            await channel.close()
            StandardError.emit("bearerd: \(failure.message)")
            throw ExitCode(failure.error == "config_refused" ? 78 : 1)
        } catch {
            await channel.close()
            StandardError.emit("bearerd: the daemon did not answer the reload: \(error)")
            throw ExitCode.failure
        }
    }
}
