import ArgumentParser

/// Runs a verb against the engine (``SessionAccess``) and turns failures into a message and an
/// exit code.
enum SessionCommand {
    static func run(_ options: ConfigOption, _ body: (any AdminChannel) async throws -> Void) async throws {
        let channel: any AdminChannel
        do {
            channel = try await SessionAccess.open(options)
        } catch let failure as CommandError {
            StandardError.emit("bearerd: \(failure.message)")
            throw ExitCode(failure.exitCode)
        }
        do {
            try await body(channel)
            await channel.close()
        } catch let failure as CommandError {
            await channel.close()
            StandardError.emit("bearerd: \(failure.message)")
            throw ExitCode(failure.exitCode)
        } catch let exit as ExitCode {
            await channel.close()
            throw exit
        } catch {
            await channel.close()
            StandardError.emit("bearerd: \(error)")
            throw ExitCode.failure
        }
    }
}
