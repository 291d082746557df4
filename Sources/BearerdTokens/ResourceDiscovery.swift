import BearerdAuth
import Foundation

/// RFC 9728: the authorization server of a protected resource, from the resource itself. Its
/// metadata is read at the well-known URI (§3.1), or at the `resource_metadata` its 401 names
/// (§5.1); the document must name the resource bearerd asked about (§3.3), and the first of its
/// `authorization_servers` is the issuer, whose own metadata is then read and checked as
/// `auth.issuer`'s would be.
enum ResourceDiscovery {
    struct Found: Sendable, Equatable {
        var issuer: String
        /// Where the resource's metadata was read.
        var document: String
    }

    /// §3.1: `/.well-known/oauth-protected-resource` inserted between the host and the path.
    static func wellKnown(_ resource: String) -> String? {
        guard let schemeEnd = resource.range(of: "://") else { return nil }
        let rest = resource[schemeEnd.upperBound...]
        let pathStart = rest.firstIndex(of: "/") ?? rest.endIndex
        var path = String(rest[pathStart...])
        while path.hasSuffix("/") { path.removeLast() }
        return String(resource[..<pathStart]) + "/.well-known/oauth-protected-resource" + path
    }

    static func authorizationServer(
        resource: String,
        allowInsecureHTTP: Bool,
        transport: any TokenTransport
    ) async throws -> Found {
        var problems: [String] = []
        var candidates: [String] = []
        if let url = Self.wellKnown(resource) { candidates.append(url) }
        // §5.1: an unauthenticated request gets a 401 naming the metadata.
        do {
            let answer = try await transport.send(
                TokenHTTPRequest(method: "GET", url: resource, headers: [("accept", "application/json")])
            )
            // Only from the API's own origin: the API does not send bearerd to fetch elsewhere.
            if answer.status == 401, let url = Self.resourceMetadata(answer), !candidates.contains(url) {
                if Self.origin(url) == Self.origin(resource) {
                    candidates.append(url)
                } else {
                    problems.append("\(resource): its 401 names resource_metadata on another origin, which is not used")
                }
            }
        } catch {
            problems.append("\(resource): \(error)")
        }
        for url in candidates {
            if let refusal = PlainHTTP.refusal(url: url, allowInsecure: allowInsecureHTTP) {
                problems.append("\(url): \(refusal)")
                continue
            }
            let response: TokenHTTPResponse
            do {
                response = try await transport.send(
                    TokenHTTPRequest(method: "GET", url: url, headers: [("accept", "application/json")])
                )
            } catch {
                problems.append("\(url): \(error)")
                continue
            }
            guard response.status == 200, let document = JSONValue.parse(response.body) else {
                problems.append("\(url): HTTP \(response.status)\(response.status == 200 ? " without JSON" : "")")
                continue
            }
            guard Discovery.sameIdentifier(document["resource"]?.stringValue, resource) else {
                problems.append("\(url): its resource is not upstream.url (RFC 9728 §3.3), so it is not used")
                continue
            }
            guard let servers = document["authorization_servers"]?.arrayValue,
                let issuer = servers.first?.stringValue, !issuer.isEmpty
            else {
                problems.append("\(url): it names no authorization_servers")
                continue
            }
            let lowered = issuer.lowercased()
            guard lowered.hasPrefix("https://") || lowered.hasPrefix("http://"), URL(string: issuer)?.host != nil,
                !issuer.contains("#"), !issuer.contains("?")
            else {
                problems.append("\(url): its authorization server is not an http(s) URL")
                continue
            }
            if resource.lowercased().hasPrefix("https://") && !lowered.hasPrefix("https://") {
                problems.append("\(url): an https API names a plain-http authorization server; bearerd refuses it")
                continue
            }
            if let refusal = PlainHTTP.refusal(url: issuer, allowInsecure: allowInsecureHTTP) {
                problems.append("\(url): its authorization server \(issuer) \(refusal)")
                continue
            }
            return Found(issuer: issuer, document: url)
        }
        throw TokenEngineError.source(
            "cannot find the API's authorization server (auth.discover, RFC 9728): \(problems.joined(separator: "; ")); set auth.issuer and auth.client_id instead"
        )
    }

    /// The `resource_metadata` of a 401's Bearer challenge.
    static func resourceMetadata(_ response: TokenHTTPResponse) -> String? {
        for (name, value) in response.headers where name.lowercased() == "www-authenticate" {
            for challenge in WWWAuthenticate.challenges(value) ?? [] where challenge.scheme == "bearer" {
                if let url = challenge.parameters.first(where: { $0.0 == "resource_metadata" })?.1,
                    url.utf8.count <= 2048
                {
                    return url
                }
            }
        }
        return nil
    }

    /// `scheme://host:port`, lowercased, with the default port made explicit.
    static func origin(_ url: String) -> String? {
        guard let parts = URLComponents(string: url), let scheme = parts.scheme?.lowercased(),
            let host = parts.host?.lowercased()
        else { return nil }
        let port = parts.port ?? (scheme == "https" ? 443 : 80)
        return "\(scheme)://\(host):\(port)"
    }
}
