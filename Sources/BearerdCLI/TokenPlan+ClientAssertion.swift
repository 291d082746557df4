import BearerdAuth
import BearerdConfig
import BearerdJOSE
import BearerdTokens
import Foundation

extension TokenPlan {
    /// The signer of `private_key_jwt` assertions, its key read and checked now, so that
    /// `check-config` and `serve` refuse a key that cannot sign before anything starts; or the
    /// platform's assertion file (`auth.client_assertion_file`), read before each request.
    static func assertionSigner(
        _ oauth2: BearerdConfiguration.Auth.OAuth2,
        clock: any TokenClock
    ) throws -> (any ClientAssertionSigner)? {
        guard oauth2.clientAuthentication == .privateKeyJWT else { return nil }
        if let path = oauth2.clientAssertionFile {
            return FileClientAssertion(path: path, clock: clock)
        }
        guard let path = oauth2.clientKeyFile else { return nil }
        let pem = try Self.readFile(path, key: "auth.client_key_file")
        let key: ClientAssertionKey
        do throws(ClientKeyError) {
            key = try ClientAssertionKey(
                pem: String(decoding: pem, as: UTF8.self),
                algorithm: oauth2.clientAssertionAlgorithm.flatMap(ClientAssertionKey.Algorithm.init(rawValue:)),
                file: path
            )
        } catch {
            // Its message names auth.client_key_file already.
            throw CommandError(keys: ["auth.client_key_file"], message: "\(error)")
        }
        return JWTClientAssertionSigner(key: key, keyID: oauth2.clientKeyID)
    }
}
