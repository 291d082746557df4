import ArgumentParser
import BearerdConfig

/// Runs a verb against the engine (``SessionAccess``) and turns failures into a message and an
/// exit code.
enum SessionCommand {
    static func run(
        _ options: ConfigOption,
        session: String? = nil,
        _ body: (any AdminChannel) async throws -> Void
    ) async throws {
        try await Self.run(options, session: session) { channel, _ in try await body(channel) }
    }

    /// As ``run(_:_:)-swift.type.method``, with the config the verb was given.
    static func run(
        _ options: ConfigOption,
        session: String? = nil,
        _ body: (any AdminChannel, BearerdConfiguration) async throws -> Void
    ) async throws {
        let channel: any AdminChannel
        let configuration: BearerdConfiguration
        do {
            (channel, configuration) = try await SessionAccess.open(options, session: session)
        } catch let failure as CommandError {
            StandardError.emit("bearerd: \(failure.message)")
            throw ExitCode(failure.exitCode)
        }
        do {
            try await body(channel, configuration)
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
