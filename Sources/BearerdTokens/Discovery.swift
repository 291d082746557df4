import BearerdAuth
import Foundation

/// What an authorization server says about itself, as far as bearerd uses it, and which
/// document said it (for `check-config`).
struct ServerMetadata: Sendable, Equatable {
    var tokenEndpoint: String
    var revocationEndpoint: String?
    var deviceAuthorizationEndpoint: String?
    /// The issuer's signing keys (`jwks_uri`), for `auth.verify.jwks_uri: discover`.
    var jwksURI: String?
    /// Where a browser logs in (`bearerd login`, the authorization code grant).
    var authorizationEndpoint: String?
    /// RFC 7591 dynamic client registration.
    var registrationEndpoint: String?
    /// RFC 9207: the server names itself in `iss` on every authorization response.
    var issuesIssInAuthorizationResponses = false
    /// `code_challenge_methods_supported`; `nil` when the server does not say.
    var codeChallengeMethods: [String]?
    /// `endpoint name → document URL` for each endpoint found.
    var sources: [String: String] = [:]
}

/// Finds a server's endpoints from an issuer. Every metadata document is read — RFC 8414's
/// (appended to the issuer, which many servers use, and the RFC's inserted form) and OpenID
/// Connect Discovery's — and merged: RFC 8414 first for the OAuth endpoints, OIDC for the rest
/// (django-oauth-toolkit lists `revocation_endpoint` only in the former).
///
/// A document is used only when its `issuer` is the configured one (RFC 8414 §3.3, OIDC
/// Discovery §4.3); an https issuer's endpoints must be https; plain http goes only to this
/// machine unless `allow_insecure_http`.
enum Discovery {
    static func candidates(issuer: String) -> [String] {
        let base = issuer.hasSuffix("/") ? String(issuer.dropLast()) : issuer
        var urls = [base + "/.well-known/oauth-authorization-server"]
        // RFC 8414 §3.1: https://host/.well-known/oauth-authorization-server/path
        if let schemeEnd = base.range(of: "://"), let pathStart = base[schemeEnd.upperBound...].firstIndex(of: "/") {
            urls.append(String(base[..<pathStart]) + "/.well-known/oauth-authorization-server" + base[pathStart...])
        }
        urls.append(base + "/.well-known/openid-configuration")
        return urls
    }

    static func metadata(
        issuer: String,
        allowInsecureHTTP: Bool,
        transport: any TokenTransport
    ) async throws -> ServerMetadata {
        var problems: [String] = []
        var documents: [(url: String, document: JSONValue)] = []
        var notFound = 0
        // No answer, or one that may change (5xx, 408, 429): the issuer may answer later.
        var transient = 0
        let candidates = Self.candidates(issuer: issuer)
        for url in candidates {
            let response: TokenHTTPResponse
            do {
                response = try await transport.send(
                    TokenHTTPRequest(method: "GET", url: url, headers: [("accept", "application/json")])
                )
            } catch {
                problems.append("\(url): \(error)")
                transient += 1
                continue
            }
            if response.status == 404 || response.status == 410 { notFound += 1 }
            if response.status >= 500 || response.status == 408 || response.status == 429 { transient += 1 }
            guard response.status == 200, let document = JSONValue.parse(response.body) else {
                problems.append("\(url): HTTP \(response.status)\(response.status == 200 ? " without JSON" : "")")
                continue
            }
            guard Self.sameIdentifier(document["issuer"]?.stringValue, issuer) else {
                // The name the server gives itself: `localhost` against `127.0.0.1` is enough.
                let named = document["issuer"]?.stringValue.map(Self.quoted) ?? "missing"
                problems.append(
                    "\(url): its issuer is \(named), not auth.issuer \(Self.quoted(issuer)) (RFC 8414 §3.3), so it is not used; if this is the right server, set auth.issuer to exactly the issuer it names"
                )
                continue
            }
            documents.append((url, document))
        }
        guard !documents.isEmpty else {
            if transient > 0 {
                // Not a configuration error: the document that did not answer may answer later.
                throw TokenEngineError.unreachable(
                    "cannot reach auth.issuer \(issuer): \(problems.joined(separator: "; "))"
                )
            }
            // Every document gave a definite answer (404, 410, a 200 that is not this issuer's
            // metadata): the configuration is wrong, and asking again will not change that.
            let what =
                notFound == candidates.count ? "no metadata (every document answered 404)" : "no usable metadata"
            throw TokenEngineError.source(
                "\(what) for auth.issuer \(issuer): \(problems.joined(separator: "; ")); set auth.token_url or check auth.issuer"
            )
        }
        var metadata = ServerMetadata(tokenEndpoint: "")
        for name in [
            "token_endpoint", "revocation_endpoint", "device_authorization_endpoint", "jwks_uri",
            "authorization_endpoint", "registration_endpoint",
        ] {
            guard
                let (url, endpoint) = documents.lazy.compactMap({ entry in
                    entry.document[name]?.stringValue.map { (entry.url, $0) }
                }).first
            else { continue }
            if name == "authorization_endpoint" || name == "registration_endpoint" {
                // Used only by the browser login: an odd one is left out (the login says it has
                // none) rather than breaking the refreshes of a session that never uses it.
                guard
                    (try? Self.check(endpoint, name: name, issuer: issuer, allowInsecureHTTP: allowInsecureHTTP))
                        != nil,
                    !endpoint.contains("#")
                else { continue }
            } else {
                try Self.check(endpoint, name: name, issuer: issuer, allowInsecureHTTP: allowInsecureHTTP)
            }
            metadata.sources[name] = url
            switch name {
            case "token_endpoint": metadata.tokenEndpoint = endpoint
            case "revocation_endpoint": metadata.revocationEndpoint = endpoint
            case "jwks_uri": metadata.jwksURI = endpoint
            case "authorization_endpoint": metadata.authorizationEndpoint = endpoint
            case "registration_endpoint": metadata.registrationEndpoint = endpoint
            default: metadata.deviceAuthorizationEndpoint = endpoint
            }
        }
        metadata.issuesIssInAuthorizationResponses = documents.contains { entry in
            entry.document["authorization_response_iss_parameter_supported"] == .bool(true)
        }
        if let methods = documents.lazy.compactMap({ $0.document["code_challenge_methods_supported"]?.arrayValue })
            .first
        {
            metadata.codeChallengeMethods = methods.compactMap(\.stringValue)
        }
        guard !metadata.tokenEndpoint.isEmpty else {
            throw TokenEngineError.source(
                "the metadata of auth.issuer \(issuer) names no token_endpoint; set auth.token_url"
            )
        }
        return metadata
    }

    /// A value a server sent, for a message: quoted, at most 200 characters, control characters
    /// and quotes shown as `?`.
    static func quoted(_ text: String) -> String {
        let shown = text.prefix(200).unicodeScalars.map { scalar in
            scalar.value < 0x20 || scalar.value == 0x7F || scalar == "\"" ? "?" : String(scalar)
        }
        return "\"" + shown.joined() + (text.count > 200 ? "…" : "") + "\""
    }

    /// Issuers (RFC 8414 §3.3) and resource identifiers (RFC 9728 §3.3) compare as strings, but
    /// a trailing slash is forgiven.
    static func sameIdentifier(_ stated: String?, _ configured: String) -> Bool {
        guard let stated else { return false }
        func trimmed(_ text: String) -> Substring { text.hasSuffix("/") ? text.dropLast() : Substring(text) }
        return trimmed(stated) == trimmed(configured)
    }

    private static func check(_ endpoint: String, name: String, issuer: String, allowInsecureHTTP: Bool) throws {
        let lowered = endpoint.lowercased()
        guard lowered.hasPrefix("https://") || lowered.hasPrefix("http://"), URL(string: endpoint)?.host != nil else {
            throw TokenEngineError.source(
                "the metadata of auth.issuer \(issuer) gives a \(name) that is not an http(s) URL"
            )
        }
        if issuer.lowercased().hasPrefix("https://") && !lowered.hasPrefix("https://") {
            throw TokenEngineError.source(
                "the metadata of auth.issuer \(issuer), an https issuer, points \(name) at plain http (\(endpoint)); bearerd refuses to send credentials there"
            )
        }
        if let refusal = PlainHTTP.refusal(url: endpoint, allowInsecure: allowInsecureHTTP) {
            throw TokenEngineError.source("the \(name) that auth.issuer's metadata gives, \(endpoint), \(refusal)")
        }
    }
}
