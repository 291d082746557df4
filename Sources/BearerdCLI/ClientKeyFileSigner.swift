import BearerdAuth
import BearerdJOSE
import BearerdTokens
import Logging
import Synchronization

/// `private_key_jwt` with `auth.client_key_file`, read again before each assertion: a key
/// rotated in its file (a new key registered at the token server, the file replaced) signs from
/// the next token request on, without a restart or a reload. The file was read and checked at
/// start (so a bad key stops `serve` and `check-config`); a replacement that cannot be read or
/// is not a key keeps the previous one (a half-written file), says so once for each content it
/// refuses in turn (a warning naming the key and what is wrong, never the file's content), and the
/// refusal that may follow names the key.
final class ClientKeyFileSigner: ClientAssertionSigner {
    private struct Loaded {
        var pem: [UInt8]
        var signer: JWTClientAssertionSigner
        /// The content last refused (warned about once), or that the file could not be read.
        var refused: Refused?
    }

    private enum Refused: Equatable {
        case unreadable
        /// A hash of the content: what may be a whole private key is not kept for this.
        case content(Int)
    }

    /// What reading the file before an assertion came to, to log outside the lock.
    private enum Outcome {
        case unchanged
        case newKey
        case unreadable(String)
        case refused(String)
    }

    private let path: String
    private let algorithm: ClientAssertionKey.Algorithm?
    private let keyID: String?
    private let read: @Sendable (String) throws -> [UInt8]
    private let logger: Logger
    private let loaded: Mutex<Loaded>

    /// - Throws: what reading or parsing the file at start throws, naming its key.
    init(
        path: String,
        algorithm: ClientAssertionKey.Algorithm?,
        keyID: String?,
        logger: Logger,
        read: @escaping @Sendable (String) throws -> [UInt8]
    ) throws {
        self.path = path
        self.algorithm = algorithm
        self.keyID = keyID
        self.read = read
        self.logger = logger
        let pem = try read(path)
        self.loaded = Mutex(Loaded(pem: pem, signer: try Self.signer(pem, path, algorithm, keyID)))
    }

    private static func signer(
        _ pem: [UInt8],
        _ path: String,
        _ algorithm: ClientAssertionKey.Algorithm?,
        _ keyID: String?
    ) throws(ClientKeyError) -> JWTClientAssertionSigner {
        let key = try ClientAssertionKey(pem: String(decoding: pem, as: UTF8.self), algorithm: algorithm, file: path)
        // The assertion's iat and exp are wall-clock times: the signer's own clock.
        return JWTClientAssertionSigner(key: key, keyID: keyID)
    }

    func assertion(clientID: String, audience: String) async throws -> Secret {
        try await self.current().assertion(clientID: clientID, audience: audience)
    }

    /// The signer of the file's key now: the previous one when the file is unchanged, or when
    /// its new content is not (yet) a key. Read under the lock (at most 64 KiB, once per token
    /// request): two assertions at once during a rotation cannot put back the key one of them
    /// read before the other.
    private func current() -> JWTClientAssertionSigner {
        let (signer, outcome) = self.loaded.withLock { loaded -> (JWTClientAssertionSigner, Outcome) in
            let pem: [UInt8]
            switch Result(catching: { try self.read(self.path) }) {
            case .failure(let error):
                guard loaded.refused != .unreadable else { return (loaded.signer, .unchanged) }
                loaded.refused = .unreadable
                return (loaded.signer, .unreadable("\(error)"))
            case .success(let bytes):
                pem = bytes
            }
            if pem == loaded.pem {
                loaded.refused = nil
                return (loaded.signer, .unchanged)
            }
            let hash = pem.hashValue
            if loaded.refused == .content(hash) { return (loaded.signer, .unchanged) }
            do {
                let signer = try Self.signer(pem, self.path, self.algorithm, self.keyID)
                loaded = Loaded(pem: pem, signer: signer, refused: nil)
                return (signer, .newKey)
            } catch {
                loaded.refused = .content(hash)
                return (loaded.signer, .refused("\(error)"))
            }
        }
        switch outcome {
        case .unchanged:
            break
        case .newKey:
            self.logger.notice("auth.client_key_file changed: signing client assertions with its new key")
        case .unreadable(let reason):
            self.logger.warning(
                "auth.client_key_file cannot be read: signing with the key read before until it can",
                metadata: ["error": "\(reason)"]
            )
        case .refused(let reason):
            self.logger.warning(
                "auth.client_key_file changed but holds no key bearerd can use: signing with the key read before until it does",
                metadata: ["error": "\(reason)"]
            )
        }
        return signer
    }
}
