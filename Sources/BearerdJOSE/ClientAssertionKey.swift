import JWTKit

/// The client's private key for `private_key_jwt` (`auth.client_key_file`), parsed and checked
/// against the algorithm it signs with (`auth.client_assertion_alg`).
///
/// jwt-kit does the signing: a well-kept JOSE library over swift-crypto, already in the build
/// through postgres-nio, with RS256, PS256 and ES256 and the key checks (RSA of 2048 bits and more).
package enum ClientAssertionKey: Sendable {
    case rsa(Insecure.RSA.PrivateKey, pss: Bool)
    case ecdsa(ES256PrivateKey)

    /// The JWS algorithms bearerd signs assertions with.
    package enum Algorithm: String, Sendable, CaseIterable {
        case rs256 = "RS256"
        case ps256 = "PS256"
        case es256 = "ES256"
    }

    /// Reads a PEM private key (PKCS#8, PKCS#1 RSA or SEC1 EC). `algorithm` defaults to RS256 for
    /// an RSA key and ES256 for a P-256 key.
    /// - Throws: ``ClientKeyError``, which names the key and never holds the key's text.
    package init(pem: String, algorithm: Algorithm?, file: String) throws(ClientKeyError) {
        if let key = try? ES256PrivateKey(pem: pem) {
            guard algorithm == nil || algorithm == .es256 else {
                throw ClientKeyError(
                    "\(file) holds an EC P-256 key, which signs ES256 only; set auth.client_assertion_alg: ES256"
                )
            }
            self = .ecdsa(key)
            return
        }
        let rsa: Insecure.RSA.PrivateKey
        do {
            rsa = try Insecure.RSA.PrivateKey(pem: pem)
        } catch {
            throw ClientKeyError(
                "\(file) holds no PEM private key bearerd can use: it takes an RSA key of 2048 bits or more or an EC P-256 key (openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256)"
            )
        }
        switch algorithm {
        case .es256:
            throw ClientKeyError(
                "\(file) holds an RSA key, which cannot sign ES256; set auth.client_assertion_alg: RS256 or PS256"
            )
        case .ps256:
            self = .rsa(rsa, pss: true)
        case .rs256, nil:
            self = .rsa(rsa, pss: false)
        }
    }

    /// The algorithm this key signs with.
    package var algorithm: Algorithm {
        switch self {
        case .rsa(_, let pss): pss ? .ps256 : .rs256
        case .ecdsa: .es256
        }
    }

    /// Adds the key to `keys` under `kid`.
    func add(to keys: JWTKeyCollection, kid: JWKIdentifier?) async {
        switch self {
        case .rsa(let key, false): await keys.add(rsa: key, digestAlgorithm: .sha256, kid: kid)
        case .rsa(let key, true): await keys.add(pss: key, digestAlgorithm: .sha256, kid: kid)
        case .ecdsa(let key): await keys.add(ecdsa: key, kid: kid)
        }
    }
}

/// `auth.client_key_file` cannot be used; the message says why and what to do.
package struct ClientKeyError: Error, Sendable, CustomStringConvertible {
    package let description: String

    init(_ description: String) {
        self.description = "auth.client_key_file: " + description
    }
}
