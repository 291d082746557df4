import BearerdAuth
import BearerdJOSE
import BearerdTokens
import Synchronization

/// `private_key_jwt` with `auth.client_key_file`, read again before each assertion: a key
/// rotated in its file (a new key registered at the token server, the file replaced) signs from
/// the next token request on, without a restart or a reload. The file was read and checked at
/// start (so a bad key stops `serve` and `check-config`); a replacement that cannot be read or
/// is not a key keeps the previous one (a half-written file), and the refusal that may follow
/// names the key.
final class ClientKeyFileSigner: ClientAssertionSigner {
    private struct Loaded {
        var pem: [UInt8]
        var signer: JWTClientAssertionSigner
    }

    private let path: String
    private let algorithm: ClientAssertionKey.Algorithm?
    private let keyID: String?
    private let loaded: Mutex<Loaded>

    /// - Throws: what reading or parsing the file at start throws, naming its key.
    init(
        path: String,
        algorithm: ClientAssertionKey.Algorithm?,
        keyID: String?,
        read: (String) throws -> [UInt8]
    ) throws {
        self.path = path
        self.algorithm = algorithm
        self.keyID = keyID
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
    /// its new content is not (yet) a key.
    private func current() -> JWTClientAssertionSigner {
        let pem = try? TokenPlan.readFile(self.path, key: "auth.client_key_file")
        return self.loaded.withLock { loaded in
            guard let pem, pem != loaded.pem,
                let signer = try? Self.signer(pem, self.path, self.algorithm, self.keyID)
            else { return loaded.signer }
            loaded = Loaded(pem: pem, signer: signer)
            return signer
        }
    }
}
