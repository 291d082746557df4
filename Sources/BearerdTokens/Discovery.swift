import Foundation

/// What an authorization server says about itself (RFC 8414 §2), as far as bearerd uses it.
struct ServerMetadata: Sendable, Equatable {
    var tokenEndpoint: String
    var revocationEndpoint: String?
    var deviceAuthorizationEndpoint: String?
}

/// Finds a server's endpoints from an issuer: OpenID Connect Discovery 1.0, then RFC 8414 (both
/// the form appended to the issuer, which many servers use, and the RFC's inserted form).
enum Discovery {
    static func candidates(issuer: String) -> [String] {
        let base = issuer.hasSuffix("/") ? String(issuer.dropLast()) : issuer
        var urls = [base + "/.well-known/openid-configuration", base + "/.well-known/oauth-authorization-server"]
        // RFC 8414 §3.1: https://host/.well-known/oauth-authorization-server/path
        if let schemeEnd = base.range(of: "://"), let pathStart = base[schemeEnd.upperBound...].firstIndex(of: "/") {
            urls.append(String(base[..<pathStart]) + "/.well-known/oauth-authorization-server" + base[pathStart...])
        }
        return urls
    }

    static func metadata(issuer: String, transport: any TokenTransport) async throws -> ServerMetadata {
        var problems: [String] = []
        for url in Self.candidates(issuer: issuer) {
            let response: TokenHTTPResponse
            do {
                response = try await transport.send(
                    TokenHTTPRequest(method: "GET", url: url, headers: [("accept", "application/json")])
                )
            } catch {
                problems.append("\(url): \(error)")
                continue
            }
            guard response.status == 200 else {
                problems.append("\(url): HTTP \(response.status)")
                continue
            }
            let document = JSONValue.parse(response.body)
            guard let endpoint = Self.url(document?["token_endpoint"]) else {
                problems.append("\(url): no token_endpoint in the metadata")
                continue
            }
            return ServerMetadata(
                tokenEndpoint: endpoint,
                revocationEndpoint: Self.url(document?["revocation_endpoint"]),
                deviceAuthorizationEndpoint: Self.url(document?["device_authorization_endpoint"])
            )
        }
        throw TokenSourceError(
            "cannot discover the token endpoint of \(issuer) (\(problems.joined(separator: "; "))); set auth.token_url instead"
        )
    }

    private static func url(_ value: JSONValue?) -> String? {
        guard let text = value?.stringValue, text.hasPrefix("https://") || text.hasPrefix("http://") else {
            return nil
        }
        return text
    }
}
