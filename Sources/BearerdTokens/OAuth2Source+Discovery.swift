import BearerdAuth
import Foundation
import Synchronization

extension OAuth2Source {
    /// The client as the token server knows it: the one bearerd registered (`auth.discover`
    /// without `auth.client_id`), else the configured one.
    var client: (id: String, secret: Secret?, authentication: ClientAuthentication) {
        if let registration = self.found.withLock({ $0.registration }) {
            let authentication: ClientAuthentication =
                switch registration.authMethod {
                case "client_secret_basic": .clientSecretBasic
                case "client_secret_post": .clientSecretPost
                default: .none
                }
            return (registration.clientID, registration.clientSecret, authentication)
        }
        return (self.settings.client.clientID, self.settings.clientSecret, self.settings.client.clientAuthentication)
    }

    /// RFC 8707 resource indicators: `auth.resource`, or with `auth.discover` the API itself.
    var resources: [String] {
        let configured = self.settings.client.authorization.resources
        if configured.isEmpty, case .resource(let resource) = self.settings.endpoint { return [resource] }
        return configured
    }

    /// The issuer known without asking anyone: `auth.issuer`, or the one discovery found.
    var knownIssuer: String? {
        switch self.settings.endpoint {
        case .tokenURL: nil
        case .issuer(let issuer): issuer
        case .resource: self.found.withLock { $0.issuer }
        }
    }

    /// The issuer: `auth.issuer`, or (`auth.discover`) the API's authorization server, asked
    /// for once (RFC 9728); `nil` with `auth.token_url`.
    func issuer(_ transport: any TokenTransport) async throws -> String? {
        guard case .resource(let resource) = self.settings.endpoint else { return self.knownIssuer }
        if let issuer = self.found.withLock({ $0.issuer }) { return issuer }
        let found = try await ResourceDiscovery.authorizationServer(
            resource: resource,
            allowInsecureHTTP: self.settings.allowInsecureHTTP,
            transport: transport
        )
        self.found.withLock { state in
            state.issuer = state.issuer ?? found.issuer
            state.document = state.document ?? found.document
        }
        return self.found.withLock { $0.issuer }
    }

    package var registration: ClientRegistration? { self.found.withLock { $0.registration } }

    package var configuredScopes: [String] { self.settings.client.scopes }

    package var issuerPin: ClientRegistration? {
        let configured = self.settings.client.clientID
        guard case .resource(let resource) = self.settings.endpoint, !configured.isEmpty,
            let issuer = self.found.withLock({ $0.issuer })
        else { return nil }
        return ClientRegistration(
            issuer: issuer,
            clientID: configured,
            clientSecret: nil,
            authMethod: ClientRegistration.pinMethod,
            resource: resource
        )
    }

    package var discovered: TokenStatus.Discovered? {
        guard case .resource(let resource) = self.settings.endpoint else { return nil }
        let found = self.found.withLock { $0 }
        let configured = self.settings.client.clientID
        return TokenStatus.Discovered(
            resource: resource,
            issuer: found.issuer,
            clientID: found.registration?.clientID ?? (configured.isEmpty ? nil : configured),
            registered: found.registration != nil
        )
    }

    /// Takes the registration the store kept, when it is for this API and no client is
    /// configured (or the pin of the configured client's issuer): the client, and the issuer it
    /// is registered at, are known from then on.
    package func adopt(_ registration: ClientRegistration?) -> Bool {
        guard let registration, case .resource(let resource) = self.settings.endpoint,
            Discovery.sameIdentifier(registration.resource, resource)
        else { return false }
        let configured = self.settings.client.clientID
        if registration.isPin {
            // The issuer first found for the configured client: kept, whatever the API says later.
            guard registration.clientID == configured, !configured.isEmpty else { return false }
            self.found.withLock { $0.issuer = registration.issuer }
            return true
        }
        guard configured.isEmpty else { return false }
        self.found.withLock { state in
            state.issuer = registration.issuer
            state.registration = registration
        }
        return true
    }

    /// With `auth.discover` and no `auth.client_id`: registers a client at the discovered
    /// server's `registration_endpoint` (RFC 7591) unless one is registered; returns the new
    /// registration, for the store. `nil` when nothing was registered.
    package func registerIfNeeded(transport: any TokenTransport) async throws -> ClientRegistration? {
        guard case .resource(let resource) = self.settings.endpoint, self.registration == nil else { return nil }
        guard let issuer = try await self.issuer(transport) else { return nil }
        let configured = self.settings.client.clientID
        if !configured.isEmpty {
            // A configured client: nothing to register, but the issuer found is kept (a pin), so
            // that an API that later names another server does not send the session there.
            return ClientRegistration(
                issuer: issuer,
                clientID: configured,
                clientSecret: nil,
                authMethod: ClientRegistration.pinMethod,
                resource: resource
            )
        }
        let metadata = try await self.metadata(issuer, transport)
        guard let endpoint = metadata.registrationEndpoint else {
            throw TokenEngineError.source(
                "the authorization server \(issuer) offers no client registration (no registration_endpoint): register bearerd there and set auth.client_id"
            )
        }
        let response = try await transport.send(
            TokenHTTPRequest(
                url: endpoint,
                headers: [("content-type", "application/json"), ("accept", "application/json")],
                body: ClientRegistration.request(
                    scopes: self.settings.client.scopes,
                    clientName: "bearerd",
                    redirectPort: self.settings.client.authorization.redirectPort
                )
            )
        )
        guard response.status == 201 || response.status == 200 else {
            let code = TokenResponseClassifier.errorCode(response.body).map { " (\($0))" } ?? ""
            throw TokenEngineError.source(
                "the registration endpoint \(endpoint) answered \(response.status)\(code): register bearerd there by hand and set auth.client_id"
            )
        }
        let registration = try ClientRegistration.parse(response.body, issuer: issuer, resource: resource)
        self.found.withLock { $0.registration = registration }
        return registration
    }
}

extension OAuth2Source {
    /// The token server refused the registered client (`invalid_client`): it was deleted or
    /// expired there. It is forgotten, and the next login registers anew.
    package func forgetRegistration() -> Bool {
        self.found.withLock { state in
            guard state.registration != nil else { return false }
            state.registration = nil
            return true
        }
    }
}
