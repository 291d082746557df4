import BearerdAuth
import BearerdLogging
import BearerdWire
import Logging
import NIOCore
import NIOHTTP1

extension ProxyHandler {
    /// The DPoP proof for this exchange's upstream request, `nil` without `auth.dpop`. It
    /// carries the newest nonce the upstream sent, which the exchange remembers for a retry.
    func dpopProof(for exchange: Exchange, target: ForwardTarget, token: BearerToken) -> String? {
        guard let dpop = self.settings.dpop else { return nil }
        let nonce = dpop.nonce
        exchange.dpopNonce = nonce
        let proof = dpop.proof(
            method: exchange.request.method.rawValue,
            htu: self.settings.htuPrefix + target.path(of: exchange.request),
            token: token,
            nonce: nonce
        )
        if proof == nil {
            self.failures.error(
                kind: "dpop_proof_unsigned",
                "cannot sign the DPoP proof of a request; it goes upstream without one",
                now: self.now
            )
        }
        return proof
    }

    /// Takes the upstream's `DPoP-Nonce` (RFC 9449 §9) for the next proofs, and says whether
    /// this response is a 401 asking for it (`use_dpop_nonce`) while the request went without
    /// it: ``UpstreamAnswer`` then holds it for one retry with the same token and the new nonce.
    func takeNonce(_ head: ResponseHead, of exchange: Exchange) -> Bool {
        guard let dpop = self.settings.dpop, let nonce = head.firstValue(of: "dpop-nonce") else { return false }
        dpop.remember(nonce)
        return head.status == 401 && nonce != exchange.dpopNonce
            && head.values(of: "www-authenticate").contains(where: { $0.contains("use_dpop_nonce") })
    }
}
