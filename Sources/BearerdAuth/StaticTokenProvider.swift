import BearerdFiles
import Foundation
import Logging
import Synchronization

/// A token read from a file (`auth.static_token_file`), for upstreams with long-lived API keys
/// and for running the proxy before an OAuth flow is configured.
///
/// The file holds the token alone; surrounding white space is ignored. When the upstream rejects
/// the token, the file is read again, so replacing the file fixes a revoked key without a restart.
package final class StaticTokenProvider: TokenProvider {
    private let path: String
    private let logger: Logger
    private let current: Mutex<BearerToken>

    /// Reads the token from `path`.
    /// - Throws: ``TokenUnavailableError`` naming the file when it cannot be read or holds no valid token.
    package init(path: String, logger: Logger) throws {
        self.path = path
        self.logger = logger
        self.current = Mutex(try Self.read(path: path))
    }

    package func currentToken() -> BearerToken? {
        self.current.withLock { $0 }
    }

    package func token() async throws -> BearerToken {
        self.current.withLock { $0 }
    }

    package func upstreamRejected(_ token: BearerToken) async -> BearerToken? {
        do {
            let fresh = try Self.read(path: self.path)
            let replaced = self.current.withLock { current -> Bool in
                guard current == token, fresh != token else { return false }
                current = fresh
                return true
            }
            if replaced {
                self.logger.notice("static token file changed; using the new token", metadata: ["file": "\(self.path)"])
                return fresh
            } else {
                self.logger.warning(
                    "upstream rejected the static token; replace the token file",
                    metadata: ["file": "\(self.path)"]
                )
            }
        } catch {
            self.logger.error("cannot re-read the static token file", metadata: ["error": "\(error)"])
        }
        return nil
    }

    /// Larger than any token file holds (a JWT is a few KiB).
    static let maxFileSize = 64 << 10

    static func read(path: String) throws -> BearerToken {
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
