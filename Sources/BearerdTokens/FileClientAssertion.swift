import BearerdAuth
import Foundation

/// `auth.client_assertion_file`: the client authenticates with a JWT its platform issued
/// (workload identity federation, RFC 7523 §2.2 as Entra ID, Google and AWS use it) instead of
/// one bearerd signs. The file is read before each request, since the platform renews it; its
/// `iss`, `sub` and `aud` are the platform's business, so the client id and audience bearerd
/// would sign with are not used.
package struct FileClientAssertion: ClientAssertionSigner {
    let file: PlatformTokenFile
    let clock: any TokenClock

    package init(path: String, clock: any TokenClock = SystemTokenClock()) {
        self.file = PlatformTokenFile(path: path, key: "auth.client_assertion_file")
        self.clock = clock
    }

    package func assertion(clientID: String, audience: String) async throws -> Secret {
        try self.file.read(now: self.clock.now).value
    }
}
