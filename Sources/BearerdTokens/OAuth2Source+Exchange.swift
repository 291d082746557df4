import Foundation

extension OAuth2Source {
    /// The form of an RFC 8693 token exchange (§2.1): the subject token (and the actor's) as the
    /// platform's files hold them now, the target (audience, resource) and the type asked for.
    /// The scope and the client's authentication are added as for any grant.
    func exchangeFields(_ exchange: TokenExchangeSettings) throws -> [(String, String)] {
        let now = self.settings.clock.now
        let subject = try Self.subjectFile(exchange).read(now: now)
        var fields = [
            ("grant_type", "urn:ietf:params:oauth:grant-type:token-exchange"),
            ("subject_token", subject.value.value),
            ("subject_token_type", exchange.subjectTokenType),
        ]
        if let actorFile = Self.actorFile(exchange) {
            let actor = try actorFile.read(now: now)
            fields.append(("actor_token", actor.value.value))
            fields.append(
                ("actor_token_type", exchange.actorTokenType ?? TokenExchangeSettings.TokenType.jwt)
            )
        }
        fields += exchange.audiences.map { ("audience", $0) }
        fields += exchange.resources.map { ("resource", $0) }
        if let requested = exchange.requestedTokenType { fields.append(("requested_token_type", requested)) }
        return fields
    }

    static func subjectFile(_ exchange: TokenExchangeSettings) -> PlatformTokenFile {
        PlatformTokenFile(path: exchange.subjectTokenFile, key: "auth.token_exchange.subject_token_file")
    }

    static func actorFile(_ exchange: TokenExchangeSettings) -> PlatformTokenFile? {
        exchange.actorTokenFile.map { PlatformTokenFile(path: $0, key: "auth.token_exchange.actor_token_file") }
    }

    /// The platform's files the client grant reads (subject, actor, client assertion).
    private var platformFiles: [PlatformTokenFile] {
        var files: [PlatformTokenFile] = []
        if let exchange = self.settings.client.tokenExchange {
            files.append(Self.subjectFile(exchange))
            if let actor = Self.actorFile(exchange) { files.append(actor) }
        }
        if let path = self.settings.client.clientAssertionFile {
            files.append(PlatformTokenFile(path: path, key: "auth.client_assertion_file"))
        }
        return files
    }

    package func clientGrantInputs() -> Int? {
        let files = self.platformFiles
        guard !files.isEmpty else { return nil }
        var hasher = Hasher()
        for file in files { hasher.combine(file.fingerprint()) }
        return hasher.finalize()
    }

    package func clientGrantRefusal(code: String) -> String {
        guard let exchange = self.settings.client.tokenExchange else {
            let what =
                switch code {
                case "invalid_scope": "check auth.scopes"
                case "unauthorized_client": "the server does not let auth.client_id use client_credentials"
                default: "check \(self.credentialKeys)"
                }
            return "the token server rejected the client credentials (\(code)): \(what)"
        }
        let files =
            exchange.actorTokenFile == nil
            ? "auth.token_exchange.subject_token_file"
            : "auth.token_exchange.subject_token_file or actor_token_file"
        let what: String
        switch code {
        case "invalid_grant", "invalid_request":
            // RFC 8693 §2.2.2 answers invalid_request for a subject token it does not take; many
            // servers answer invalid_grant.
            what =
                "the token in \(files) is expired, revoked or not trusted for this client, or"
                + " auth.token_exchange.subject_token_type does not match it; bearerd tries again when the file changes"
        case "invalid_target":
            what = "check auth.token_exchange.audience and auth.token_exchange.resource"
        case "invalid_scope":
            what = "check auth.scopes"
        case "unauthorized_client":
            what = "the server does not let auth.client_id use token exchange"
        default:
            what = "check \(self.credentialKeys)" + (code.hasPrefix("HTTP") ? ", and the token in \(files)" : "")
        }
        return "the token server refused the token exchange (\(code)): \(what)"
    }

    package func clientGrantStatus(now: Date) -> ClientGrantStatus? {
        guard let exchange = self.settings.client.tokenExchange else { return nil }
        let subject = try? Self.subjectFile(exchange).read(now: .distantPast)
        return ClientGrantStatus(
            source: "token_exchange",
            subjectTokenFile: exchange.subjectTokenFile,
            subjectTokenExpiresAt: subject?.expiresAt,
            subjectTokenSubject: subject?.subject
        )
    }
}
