import BearerdTokens
import Foundation
import JWTKit
import Synchronization

/// The issuer's JSON Web Key Set, fetched through the token transport, kept, and fetched again
/// when a token names a `kid` it does not hold (a key rollover) or when it is older than
/// `maxAge`. Fetches are bounded: at most one per `minimumInterval`, whatever tokens say, a body
/// of at most 256 KiB and 100 keys.
package final class JWKSCache: Sendable {
    private struct Loaded {
        var keys: JWTKeyCollection
        /// Each key id with the algorithm its JWK declares, if any.
        var algorithms: [String: String?]
        var fetchedAt: Date
    }

    private struct State {
        var loaded: Loaded?
        var lastFetch: Date?
        var url: String?
    }

    static let maxBytes = 256 << 10
    static let maxKeys = 100

    /// Where the set is: `auth.verify.jwks_uri`, or the `jwks_uri` of the issuer's metadata.
    package enum Location: Sendable {
        case url(String)
        case discovered(@Sendable (any TokenTransport) async throws -> String)
    }

    let location: Location
    let minimumInterval: TimeInterval
    let maxAge: TimeInterval
    private let clock: any TokenClock
    private let state = Mutex(State())

    package init(
        _ location: Location,
        minimumInterval: TimeInterval = 30,
        maxAge: TimeInterval = 3600,
        clock: any TokenClock
    ) {
        self.location = location
        self.minimumInterval = minimumInterval
        self.maxAge = maxAge
        self.clock = clock
    }

    /// The keys to verify a token with `kid` and `algorithm`, fetched first if needed.
    func keys(
        for kid: String?,
        algorithm: String,
        transport: any TokenTransport
    ) async throws(TokenEngineError)
        -> JWTKeyCollection
    {
        let now = self.clock.now
        let (loaded, mayFetch) = self.state.withLock { state in
            (state.loaded, state.lastFetch.map { now.timeIntervalSince($0) >= self.minimumInterval } ?? true)
        }
        var current = loaded
        let stale = current.map { now.timeIntervalSince($0.fetchedAt) >= self.maxAge } ?? true
        let unknown = current.map { loaded in kid.map { loaded.algorithms[$0] == nil } ?? false } ?? true
        if (stale || unknown) && mayFetch {
            self.state.withLock { $0.lastFetch = now }
            do throws(TokenEngineError) {
                current = try await self.fetch(transport, at: now)
                self.state.withLock { $0.loaded = current }
            } catch {
                // A set that cannot be fetched now: the one held still serves, if any.
                guard current != nil else { throw error }
            }
        }
        guard let current else {
            throw TokenEngineError.verification("the issuer's JWKS (\(self.url)) has not been fetched yet")
        }
        if let kid {
            guard let declared = current.algorithms[kid] else {
                throw TokenEngineError.verification(
                    "the issuer's JWKS (\(self.url)) has no key \"\(Printable.bounded(kid))\""
                )
            }
            if let declared, declared != algorithm {
                throw TokenEngineError.verification(
                    "the token is signed \(algorithm), but key \"\(Printable.bounded(kid))\" is for \(declared)"
                )
            }
        }
        return current.keys
    }

    /// What messages call the set: its URL once known.
    private var url: String {
        self.state.withLock { $0.url } ?? "the jwks_uri of auth.issuer's metadata"
    }

    private func fetch(_ transport: any TokenTransport, at now: Date) async throws(TokenEngineError) -> Loaded {
        let url: String
        switch self.location {
        case .url(let configured):
            url = configured
        case .discovered(let discover):
            do {
                url = try await discover(transport)
            } catch {
                throw TokenEngineError.verification("\(error)")
            }
        }
        self.state.withLock { $0.url = url }
        let response: TokenHTTPResponse
        do {
            response = try await transport.send(
                TokenHTTPRequest(method: "GET", url: url, headers: [("accept", "application/json")])
            )
        } catch {
            throw TokenEngineError.verification("cannot fetch the issuer's JWKS (\(url)): \(error)")
        }
        guard response.status == 200 else {
            throw TokenEngineError.verification("the issuer's JWKS (\(self.url)) answered HTTP \(response.status)")
        }
        guard response.body.count <= Self.maxBytes,
            let object = try? JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any],
            let entries = object["keys"] as? [Any], entries.count <= Self.maxKeys
        else {
            throw TokenEngineError.verification(
                "the issuer's JWKS (\(self.url)) is not a JSON object with a \"keys\" array of at most \(Self.maxKeys) keys"
            )
        }
        let keys = JWTKeyCollection()
        var algorithms: [String: String?] = [:]
        for entry in entries {
            // Keys bearerd cannot use (encryption keys, unknown types, no kid) are passed over.
            guard let fields = entry as? [String: Any], fields["use"] as? String ?? "sig" == "sig",
                let kid = fields["kid"] as? String,
                let data = try? JSONSerialization.data(withJSONObject: fields),
                let jwk = try? JSONDecoder().decode(JWK.self, from: data),
                (try? await keys.add(jwk: jwk)) != nil
            else { continue }
            algorithms[kid] = fields["alg"] as? String
        }
        return Loaded(keys: keys, algorithms: algorithms, fetchedAt: now)
    }
}
