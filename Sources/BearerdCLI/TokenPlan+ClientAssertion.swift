import BearerdAuth
import BearerdConfig
import BearerdJOSE
import BearerdTokens
import Foundation
import Logging

extension TokenPlan {
    /// The signer of `private_key_jwt` assertions, its key read and checked now, so that
    /// `check-config` and `serve` refuse a key that cannot sign before anything starts (and read
    /// again before each assertion, ``ClientKeyFileSigner``); or the
    /// platform's assertion file (`auth.client_assertion_file`), read before each request.
    static func assertionSigner(
        _ oauth2: BearerdConfiguration.Auth.OAuth2,
        clock: any TokenClock,
        logger: Logger
    ) throws -> (any ClientAssertionSigner)? {
        guard oauth2.clientAuthentication == .privateKeyJWT else { return nil }
        if let path = oauth2.clientAssertionFile {
            return FileClientAssertion(path: path, clock: clock)
        }
        guard let path = oauth2.clientKeyFile else { return nil }
        do {
            return try ClientKeyFileSigner(
                path: path,
                algorithm: oauth2.clientAssertionAlgorithm.flatMap(ClientAssertionKey.Algorithm.init(rawValue:)),
                keyID: oauth2.clientKeyID,
                logger: logger,
                read: { try Self.readFile($0, key: "auth.client_key_file") }
            )
        } catch let error as CommandError {
            throw error
        } catch {
            // Its message names auth.client_key_file already.
            throw CommandError(keys: ["auth.client_key_file"], message: "\(error)")
        }
    }
}
