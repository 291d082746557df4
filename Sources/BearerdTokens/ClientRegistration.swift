import BearerdAuth
import Foundation

/// A client bearerd registered itself (RFC 7591), kept in the store sealed like the tokens: the
/// authorization server it is registered at and what the server issued.
package struct ClientRegistration: Sendable, Equatable {
    /// The authorization server's issuer (RFC 8414).
    package var issuer: String
    package var clientID: String
    /// Issued when the server makes the client confidential despite the request.
    package var clientSecret: Secret?
    /// `none`, `client_secret_basic` or `client_secret_post`, as the server answered.
    package var authMethod: String
    /// The API (`upstream.url`) whose metadata named the issuer.
    package var resource: String

    package init(issuer: String, clientID: String, clientSecret: Secret?, authMethod: String, resource: String) {
        self.issuer = issuer
        self.clientID = clientID
        self.clientSecret = clientSecret
        self.authMethod = authMethod
        self.resource = resource
    }

    /// The `authMethod` of a pin: not a registration, the issuer first found for a configured
    /// client (`auth.discover` with `auth.client_id`).
    static let pinMethod = "configured"

    /// Whether this is a pin rather than a client bearerd registered.
    package var isPin: Bool { self.authMethod == Self.pinMethod }

    /// The RFC 7591 §2 metadata bearerd registers with: a native public client that logs in
    /// with the authorization code grant at a loopback redirect (RFC 8252 §7.3).
    static func request(scopes: [String], clientName: String, redirectPort: Int) -> [UInt8] {
        let redirect = redirectPort == 0 ? "http://127.0.0.1/callback" : "http://127.0.0.1:\(redirectPort)/callback"
        var body: [String: Any] = [
            "client_name": clientName,
            "redirect_uris": [redirect],
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
            "token_endpoint_auth_method": "none",
            "application_type": "native",
        ]
        if !scopes.isEmpty { body["scope"] = scopes.joined(separator: " ") }
        return Array((try? JSONSerialization.data(withJSONObject: body, options: [.sortedKeys])) ?? Data())
    }

    /// Reads an RFC 7591 §3.2.1 answer.
    /// - Throws: ``TokenEngineError`` `source` for an answer that is not a usable registration.
    static func parse(_ body: [UInt8], issuer: String, resource: String) throws -> ClientRegistration {
        guard body.count <= 64 * 1024, let document = JSONValue.parse(body), case .object = document else {
            throw TokenEngineError.source("the registration endpoint answered without a JSON object (RFC 7591 §3.2.1)")
        }
        guard let clientID = document["client_id"]?.stringValue, !clientID.isEmpty, clientID.utf8.count <= 512,
            clientID.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F })
        else {
            throw TokenEngineError.source(
                "the registration endpoint answered without a usable client_id (RFC 7591 §3.2.1)"
            )
        }
        let method = document["token_endpoint_auth_method"]?.stringValue ?? "none"
        let secret = document["client_secret"]?.stringValue.flatMap { $0.isEmpty ? nil : Secret($0) }
        switch method {
        case "none": break
        case "client_secret_basic", "client_secret_post":
            guard secret != nil else {
                throw TokenEngineError.source(
                    "the registration endpoint made the client \(method) without a client_secret: register a client by hand and set auth.client_id"
                )
            }
        default:
            throw TokenEngineError.source(
                "the registration endpoint chose token_endpoint_auth_method \(PrintableMethod.of(method)), which bearerd cannot use for a registered client: register a client by hand and set auth.client_id"
            )
        }
        return ClientRegistration(
            issuer: issuer,
            clientID: clientID,
            clientSecret: secret,
            authMethod: method,
            resource: resource
        )
    }
}

/// A method name from a server, shown bounded and printable.
enum PrintableMethod {
    static func of(_ text: String) -> String {
        String(
            text.prefix(64).unicodeScalars.map {
                $0.isASCII && $0.value >= 0x20 && $0.value < 0x7F ? Character($0) : "?"
            }
        )
    }
}
