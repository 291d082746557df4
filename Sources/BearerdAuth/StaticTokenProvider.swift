import BearerdFiles
import BearerdLogging
import Foundation
import Logging
import NIOCore
import Synchronization

/// A token read from a file (`auth.static_token_file`), for upstreams with long-lived API keys
/// and for running the proxy before an OAuth flow is configured.
///
/// The file holds the token alone; surrounding white space is ignored. When the upstream rejects
/// the token, the file is read again, so replacing the file fixes a revoked key without a restart.
/// An upstream that rejects every request costs one read of the file a second at most, and one
/// warning per ``LogThrottle/window`` (the rest counted into the next one), not one per request.
package final class StaticTokenProvider: TokenProvider {
    private let path: String
    private let logger: Logger
    private let current: Mutex<BearerToken>
    private let lines = Mutex(LogThrottle())
    /// When the file was last read after a rejection, and what that read found.
    private let lastRead = Mutex<(at: NIODeadline, outcome: Result<BearerToken, TokenUnavailableError>)?>(nil)
    static let rereadInterval = TimeAmount.seconds(1)
    private let now: @Sendable () -> NIODeadline

    /// Reads the token from `path`.
    /// - Throws: ``TokenUnavailableError`` naming the file when it cannot be read or holds no valid token.
    package init(path: String, logger: Logger, now: @escaping @Sendable () -> NIODeadline = { .now() }) throws {
        self.path = path
        self.logger = logger
        self.now = now
        self.current = Mutex(try Self.read(path: path))
    }

    package func currentToken() -> BearerToken? {
        self.current.withLock { $0 }
    }

    package func token() async throws -> BearerToken {
        self.current.withLock { $0 }
    }

    package func upstreamRejected(_ token: BearerToken, path: String) async -> BearerToken? {
        let now = self.now()
        let outcome = self.lastRead.withLock { last in
            if let last, now < last.at + Self.rereadInterval { return last.outcome }
            let outcome = Result { () throws(TokenUnavailableError) in try Self.read(path: self.path) }
            last = (now, outcome)
            return outcome
        }
        switch outcome {
        case .success(let fresh):
            let (replaced, current) = self.current.withLock { current -> (Bool, BearerToken) in
                guard current == token, fresh != token else { return (false, current) }
                current = fresh
                return (true, fresh)
            }
            // Another request's rejection already took the new file: retry with it.
            if !replaced && current != token { return current }
            if replaced {
                self.logger.notice("static token file changed; using the new token", metadata: ["file": "\(self.path)"])
                return fresh
            }
            self.log(.warning, "upstream rejected the static token; replace the token file", now: now)
        case .failure(let error):
            self.log(.error, "cannot re-read the static token file", now: now, ["error": "\(error)"])
        }
        return nil
    }

    /// Writes the line once per window of its kind, with the count of those held back since.
    private func log(_ level: Logger.Level, _ message: String, now: NIODeadline, _ metadata: Logger.Metadata = [:]) {
        let verdict = self.lines.withLock { $0.record(message, level: level, message: message, now: now) }
        var metadata = metadata
        metadata["file"] = "\(self.path)"
        if let summary = verdict.summary {
            self.logger.log(
                level: summary.level,
                "\(summary.message) (repeated)",
                metadata: ["file": "\(self.path)", "count": "\(summary.count)"]
            )
        }
        self.logger.log(level: verdict.logNow ? level : .debug, "\(message)", metadata: metadata)
    }

    /// Larger than any token file holds (a JWT is a few KiB).
    static let maxFileSize = 64 << 10

    static func read(path: String) throws(TokenUnavailableError) -> BearerToken {
        let contents: (bytes: [UInt8], mode: mode_t)?
        do throws(FileCheckError) {
            contents = try CheckedDirectory.read(file: path, limit: Self.maxFileSize)
        } catch {
            throw TokenUnavailableError.tokenSourceFailed("cannot read the token file: \(error)")
        }
        guard let bytes = contents?.bytes else {
            throw TokenUnavailableError.tokenSourceFailed(
                "cannot read the token file \(path): it does not exist; write the token into it"
            )
        }
        let value = String(decoding: bytes, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        guard !value.isEmpty else {
            throw TokenUnavailableError.tokenSourceFailed("the token file \(path) is empty: write the token into it")
        }
        guard BearerToken.isValidTokenValue(value) else {
            throw TokenUnavailableError.tokenSourceFailed(
                "the token file \(path) holds characters a bearer token may not have (RFC 6750): it must hold the token alone"
            )
        }
        return BearerToken(value)
    }
}
