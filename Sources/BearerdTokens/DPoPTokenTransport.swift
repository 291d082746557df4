import BearerdAuth
import Foundation
import Synchronization

/// `auth.dpop`: every POST to the token server (token, device and revocation endpoints) carries
/// a fresh DPoP proof (RFC 9449 §5). A server that answers `use_dpop_nonce` with a `DPoP-Nonce`
/// gets the request once more with that nonce (§8); the newest nonce each server sent is used
/// from then on. Discovery and key sets (GET) go without a proof.
package final class DPoPTokenTransport: TokenTransport {
    private let base: any TokenTransport
    private let prover: any DPoPProver
    /// The newest `DPoP-Nonce` per server origin; a handful of origins at most.
    private let nonces = Mutex<[String: String]>([:])
    private static let maxOrigins = 8

    package init(_ base: any TokenTransport, prover: any DPoPProver) {
        self.base = base
        self.prover = prover
    }

    package func send(_ request: TokenHTTPRequest) async throws -> TokenHTTPResponse {
        guard request.method == "POST", let target = Self.split(request.url) else {
            return try await self.base.send(request)
        }
        let nonce = self.nonces.withLock { $0[target.origin] }
        let response = try await self.send(request, to: target, nonce: nonce)
        guard let fresh = response.nonce, fresh != nonce, (400..<500).contains(response.answer.status),
            TokenResponseClassifier.errorCode(response.answer.body) == "use_dpop_nonce"
        else { return response.answer }
        return try await self.send(request, to: target, nonce: fresh).answer
    }

    /// Sends `request` with a proof carrying `nonce`; keeps the nonce the answer brings.
    private func send(
        _ request: TokenHTTPRequest,
        to target: (origin: String, htu: String),
        nonce: String?
    ) async throws -> (answer: TokenHTTPResponse, nonce: String?) {
        guard let proof = self.prover.proof(method: "POST", url: target.htu, accessToken: nil, nonce: nonce) else {
            throw TokenEngineError.source("cannot sign a DPoP proof for the token request (auth.dpop)")
        }
        var signed = request
        signed.headers.append(("DPoP", proof))
        let answer = try await self.base.send(signed)
        let fresh = answer.header("dpop-nonce").flatMap { DPoPNonce.isValid($0) ? $0 : nil }
        if let fresh { self.remember(fresh, for: target.origin) }
        return (answer, fresh)
    }

    private func remember(_ nonce: String, for origin: String) {
        self.nonces.withLock { nonces in
            if nonces[origin] == nil, nonces.count >= Self.maxOrigins { nonces.removeAll() }
            nonces[origin] = nonce
        }
    }

    /// The origin (`scheme://host[:port]`) of `url`, and its `htu`: the URL without query or
    /// fragment (RFC 9449 §4.2).
    static func split(_ url: String) -> (origin: String, htu: String)? {
        guard let components = URLComponents(string: url), let scheme = components.scheme,
            let host = components.percentEncodedHost, !host.isEmpty
        else { return nil }
        let bracketed = host.contains(":") && !host.hasPrefix("[") ? "[" + host + "]" : host
        var origin = scheme.lowercased() + "://" + bracketed.lowercased()
        if let port = components.port { origin += ":\(port)" }
        return (origin, origin + components.percentEncodedPath)
    }
}
