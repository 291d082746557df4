import BearerdAuth
import Foundation
import Synchronization

extension OAuth2Source {
    package var authorizationTimeout: Duration { self.settings.client.authorization.timeout }

    package func authorizationServer(transport: any TokenTransport) async throws -> AuthorizationServer {
        let configured = self.settings.client.authorization.url
        guard let issuer = try await self.issuer(transport) else {
            guard let configured else {
                throw TokenEngineError.source(
                    "no browser login is configured: set auth.authorization_url (or auth.issuer, whose metadata names it), or use `bearerd login --device` or a password"
                )
            }
            return AuthorizationServer(endpoint: configured, issuer: nil, issuerRequired: false)
        }
        let metadata = try await self.metadata(issuer, transport)
        if let methods = metadata.codeChallengeMethods, !methods.contains("S256") {
            throw TokenEngineError.source(
                "the metadata of auth.issuer \(issuer) lists code_challenge_methods_supported without S256: bearerd's browser login needs PKCE with S256 (RFC 7636)"
            )
        }
        guard let endpoint = configured ?? metadata.authorizationEndpoint else {
            throw TokenEngineError.source(
                "the metadata of auth.issuer \(issuer) names no authorization_endpoint: set auth.authorization_url, or use `bearerd login --device` or a password"
            )
        }
        return AuthorizationServer(
            endpoint: endpoint,
            issuer: issuer,
            issuerRequired: metadata.issuesIssInAuthorizationResponses
        )
    }

    package func authorizationURL(
        _ server: AuthorizationServer,
        state: String,
        challenge: String,
        redirectURI: String
    ) -> String {
        let client = self.settings.client
        var fields = [
            ("response_type", "code"), ("client_id", self.client.id), ("redirect_uri", redirectURI),
            ("state", state), ("code_challenge", challenge), ("code_challenge_method", "S256"),
        ]
        let scopes = self.loginScopes(withAsked: true)
        if !scopes.isEmpty { fields.append(("scope", scopes.joined(separator: " "))) }
        // RFC 9470 §4: what the API asked of the person's login.
        let asks = self.loginAsks.withLock { $0 }
        if !asks.acrValues.isEmpty { fields.append(("acr_values", asks.acrValues.joined(separator: " "))) }
        if let maxAge = asks.maxAge { fields.append(("max_age", String(maxAge))) }
        fields += self.resources.map { ("resource", $0) }
        fields += client.authorization.parameters.map { ($0.name, $0.value) }
        let query = String(decoding: FormEncoding.encode(fields), as: UTF8.self)
        // RFC 6749 §3.1: a query the endpoint already has is kept.
        return server.endpoint + (server.endpoint.contains("?") ? "&" : "?") + query
    }

    package func authorizationCodeRequest(
        code: Secret,
        verifier: Secret,
        redirectURI: String,
        transport: any TokenTransport
    ) async throws -> TokenHTTPRequest {
        try await self.request(
            try await self.tokenURL(transport),
            [
                ("grant_type", "authorization_code"), ("code", code.value), ("redirect_uri", redirectURI),
                ("code_verifier", verifier.value),
            ] + self.resources.map { ("resource", $0) },
            withScope: false
        )
    }
}
