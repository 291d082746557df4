import Crypto
import Foundation

/// What `bearerd login` shows the browser: the authorization URL of one login begun by the
/// daemon, its `state` (the CLI checks the redirect against it too), and how long it is good for.
package struct AuthorizationPrompt: Sendable, Codable, Equatable {
    package var authorizationURL: String
    package var state: String
    package var redirectURI: String
    /// Seconds the daemon keeps the login open.
    package var expiresIn: Int

    package init(authorizationURL: String, state: String, redirectURI: String, expiresIn: Int) {
        self.authorizationURL = authorizationURL
        self.state = state
        self.redirectURI = redirectURI
        self.expiresIn = expiresIn
    }

    enum CodingKeys: String, CodingKey {
        case state
        case authorizationURL = "authorization_url"
        case redirectURI = "redirect_uri"
        case expiresIn = "expires_in"
    }
}

/// Where a browser logs in, as the config or the issuer's metadata says.
package struct AuthorizationServer: Sendable, Equatable {
    package var endpoint: String
    /// The `iss` an authorization response may carry (RFC 9207); `nil` when unknown.
    package var issuer: String?
    /// The server names itself in every response (`authorization_response_iss_parameter_supported`).
    package var issuerRequired: Bool
}

/// One browser login begun and not finished: the daemon keeps its PKCE verifier (RFC 7636),
/// which never leaves it, until the code comes back.
struct PendingAuthorization: Sendable {
    var state: String
    var verifier: Secret
    var redirectURI: String
    var server: AuthorizationServer
    /// On the engine's clock.
    var deadline: Date
}

/// The browser logins begun and not finished, at most ``limit`` (the oldest goes first).
struct PendingAuthorizations: Sendable {
    static let limit = 8
    private var entries: [PendingAuthorization] = []

    mutating func add(_ entry: PendingAuthorization, now: Date) {
        self.entries.removeAll { $0.deadline <= now }
        if self.entries.count >= Self.limit { self.entries.removeFirst() }
        self.entries.append(entry)
    }

    /// The login `state` names, taken out: a code is redeemed once, and a second redirect finds
    /// nothing. `nil` for an unknown or expired state.
    mutating func take(state: String, now: Date) -> PendingAuthorization? {
        self.entries.removeAll { $0.deadline <= now }
        guard let index = self.entries.firstIndex(where: { PKCE.sameText($0.state, state) }) else { return nil }
        return self.entries.remove(at: index)
    }
}

/// RFC 7636 with S256, and the loopback redirect RFC 8252 §7.3 describes.
package enum PKCE {
    /// 32 random bytes, base64url: a verifier (43 characters, §4.1) or a `state`.
    static func randomText() -> String {
        var generator = SystemRandomNumberGenerator()
        let bytes = (0..<32).map { _ in UInt8.random(in: 0...255, using: &generator) }
        return Self.base64URL(bytes)
    }

    /// `BASE64URL(SHA256(ASCII(verifier)))` (§4.2).
    static func challenge(_ verifier: Secret) -> String {
        Self.base64URL(Array(SHA256.hash(data: Array(verifier.value.utf8))))
    }

    static func base64URL(_ bytes: [UInt8]) -> String {
        Data(bytes).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    /// Compares in time that does not depend on where the texts differ.
    package static func sameText(_ left: String, _ right: String) -> Bool {
        let a = Array(left.utf8)
        let b = Array(right.utf8)
        guard a.count == b.count else { return false }
        var difference: UInt8 = 0
        for index in a.indices { difference |= a[index] ^ b[index] }
        return difference == 0
    }

    /// Whether `uri` is a loopback redirect bearerd's CLI listens on:
    /// `http://127.0.0.1:PORT/callback` or `http://[::1]:PORT/callback`, nothing else (no
    /// user, query or fragment): the daemon hands a code's verifier to nothing else.
    package static func isLoopbackRedirect(_ uri: String) -> Bool {
        for host in ["http://127.0.0.1:", "http://[::1]:"] where uri.hasPrefix(host) {
            let rest = uri.dropFirst(host.count)
            guard rest.hasSuffix("/callback") else { return false }
            let port = rest.dropLast("/callback".count)
            guard (1...5).contains(port.count), port.allSatisfy({ $0.isASCII && $0.isNumber }),
                let number = Int(port), (1...65535).contains(number)
            else { return false }
            return true
        }
        return false
    }
}
