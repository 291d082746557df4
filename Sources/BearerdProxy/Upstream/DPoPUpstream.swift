import BearerdAuth
import Synchronization

/// `auth.dpop` on the data path: each request bearerd adds a token to goes upstream as
/// `Authorization: DPoP <token>` with a fresh proof for its method and exact target (RFC 9449
/// §7), carrying the newest `DPoP-Nonce` the upstream sent (§9). One instance serves every event
/// loop and outlives reloads: the key and the nonce belong to the session, not to a config.
package final class DPoPUpstream: Sendable {
    private let prover: any DPoPProver
    private let latestNonce = Mutex<String?>(nil)

    package init(prover: any DPoPProver) {
        self.prover = prover
    }

    /// The nonce the next proof carries.
    var nonce: String? { self.latestNonce.withLock { $0 } }

    /// Keeps a nonce the upstream sent, when it is one RFC 9449 allows.
    func remember(_ nonce: String) {
        guard DPoPNonce.isValid(nonce) else { return }
        self.latestNonce.withLock { $0 = nonce }
    }

    /// A proof for `method` on `htu` (the upstream URL of the request, without its query).
    func proof(method: String, htu: String, token: BearerToken, nonce: String?) -> String? {
        self.prover.proof(method: method, url: htu, accessToken: token, nonce: nonce)
    }
}
