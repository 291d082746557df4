import BearerdAuth
import Configuration
import Foundation

#if canImport(Glibc)
import Glibc
#endif

extension ConfigBuilder {
    mutating func auth() -> BearerdConfiguration.Auth {
        let staticFile = self.string("auth.static_token_file")
        let oauth2 = self.string("auth.token_url") != nil || self.string("auth.issuer") != nil
        let json = self.string("auth.json.refresh_url") != nil
        let source: BearerdConfiguration.Auth.Source
        switch (staticFile, oauth2, json) {
        case (let path?, false, false):
            let resolved = self.resolve(path)
            if let problem = SecretFileCheck.problem(path: resolved) { self.issue("auth.static_token_file", problem) }
            source = .staticFile(resolved)
        case (nil, true, false):
            source = .oauth2(self.oauth2())
        case (nil, false, true):
            source = .json(self.json())
        case (nil, false, false):
            self.issue(
                "auth",
                "required: a token source: auth.token_url or auth.issuer (OAuth 2.0), auth.json.refresh_url (a JSON API) or auth.static_token_file"
            )
            source = .staticFile("")
        default:
            self.issue(
                "auth",
                "names more than one token source: keep one of auth.static_token_file, auth.token_url/auth.issuer and auth.json.refresh_url"
            )
            source = .staticFile("")
        }
        var refreshTokenFile: String?
        if let path = self.string("auth.refresh_token_file") {
            refreshTokenFile = self.resolve(path)
            if let problem = SecretFileCheck.problem(path: refreshTokenFile!) {
                self.issue("auth.refresh_token_file", problem)
            }
            if case .staticFile = source { self.issue("auth.refresh_token_file", "does not apply to a static token") }
        }
        let caFile = self.string("auth.ca_file").map(self.resolve)
        if let caFile, access(caFile, R_OK) != 0 {
            self.issue("auth.ca_file", "cannot read \(caFile): check that it exists and bearerd may read it")
        }
        let tlsClientCertificate = self.clientCertificate(certificate: "auth.tls_cert_file", key: "auth.tls_key_file")
        if tlsClientCertificate != nil, case .staticFile = source {
            self.issue("auth.tls_cert_file", "does not apply to a static token: nothing is sent to a token server")
        }
        let verify = self.verify(source: source)
        let dpop = self.bool(ConfigKeys.Auth.dpop)
        if dpop {
            switch source {
            case .oauth2: break
            case .staticFile:
                self.issue("auth.dpop", "does not apply to a static token: a DPoP token is issued for bearerd's key")
            case .json:
                self.issue("auth.dpop", "applies to an OAuth 2.0 token server (auth.token_url or auth.issuer) only")
            }
        }
        return BearerdConfiguration.Auth(
            allowInsecureHTTP: self.allowInsecureHTTP,
            source: source,
            refreshTokenFile: refreshTokenFile,
            caFile: caFile,
            tlsClientCertificate: tlsClientCertificate,
            verify: verify,
            dpop: dpop,
            requestTimeout: self.duration(ConfigKeys.Auth.Engine.requestTimeout),
            connectTimeout: self.duration(ConfigKeys.Auth.Engine.connectTimeout),
            leeway: self.duration(ConfigKeys.Auth.Engine.leeway),
            refreshMargin: self.duration(ConfigKeys.Auth.Engine.refreshMargin),
            defaultLifetime: self.duration(ConfigKeys.Auth.Engine.defaultLifetime),
            maxRefreshesPerMinute: max(1, self.count(ConfigKeys.Auth.Engine.maxRefreshesPerMinute))
        )
    }

    private mutating func oauth2() -> BearerdConfiguration.Auth.OAuth2 {
        let tokenURL = self.string("auth.token_url")
        let issuer = self.string("auth.issuer")
        if tokenURL != nil && issuer != nil {
            self.issue("auth.issuer", "set auth.token_url or auth.issuer, not both")
        }
        let revocationURL = self.string("auth.revocation_url")
        let deviceURL = self.string("auth.device_authorization_url")
        for (key, value) in [
            ("auth.token_url", tokenURL), ("auth.issuer", issuer), ("auth.revocation_url", revocationURL),
            ("auth.device_authorization_url", deviceURL),
        ] {
            if let value,
                !(value.hasPrefix("https://") || value.hasPrefix("http://")) || URL(string: value)?.host == nil
            {
                self.issue(key, "must be an http or https URL (got \"\(value)\")")
            } else if let value, let refusal = PlainHTTP.refusal(url: value, allowInsecure: self.allowInsecureHTTP) {
                self.issue(key, refusal)
            }
        }
        let clientID = self.string("auth.client_id")
        if clientID == nil { self.issue("auth.client_id", "required with auth.token_url or auth.issuer") }
        let secretFile = self.string("auth.client_secret_file").map(self.resolve)
        if let secretFile, let problem = SecretFileCheck.problem(path: secretFile) {
            self.issue("auth.client_secret_file", problem)
        }
        // Without a value, the secret decides: Basic with one, none without.
        let written = self.isSet(ConfigKeys.Auth.clientAuth) ? self.choice(ConfigKeys.Auth.clientAuth) : nil
        let parsed =
            self.isSet(ConfigKeys.Auth.clientAuth)
            ? written.flatMap(ClientAuthentication.init(rawValue:))
            : (secretFile == nil ? ClientAuthentication.none : .clientSecretBasic)
        let authentication = parsed ?? .clientSecretBasic
        if parsed == nil {
            // choice() has said what the key accepts.
        } else if authentication.sendsSecret && secretFile == nil {
            self.issue("auth.client_secret_file", "required with auth.client_auth: \(authentication.rawValue)")
        } else if authentication == .tlsClientAuth && self.string("auth.tls_cert_file") == nil {
            self.issue(
                "auth.tls_cert_file",
                "required with auth.client_auth: tls_client_auth (the client certificate, PEM)"
            )
        }
        let assertion = self.clientAssertion(authentication: parsed, issuer: issuer)
        return BearerdConfiguration.Auth.OAuth2(
            tokenURL: tokenURL,
            issuer: issuer,
            clientID: clientID ?? "",
            clientSecretFile: secretFile,
            clientAuthentication: authentication,
            clientKeyFile: assertion.keyFile,
            clientKeyID: assertion.keyID,
            clientAssertionAlgorithm: assertion.algorithm,
            clientAssertionAudience: assertion.audience,
            scopes: self.list(ConfigKeys.Auth.scopes),
            extraParameters: self.pairs(
                ConfigKeys.Auth.extraParams,
                separator: "=",
                example: "audience=https://api.example"
            ),
            clientCredentials: self.bool(ConfigKeys.Auth.clientCredentials),
            revocationURL: revocationURL,
            deviceAuthorizationURL: deviceURL
        )
    }

    private mutating func json() -> BearerdConfiguration.Auth.JSON {
        let refreshURL = self.string("auth.json.refresh_url") ?? ""
        let loginURL = self.string("auth.json.login_url")
        let logoutURL = self.string("auth.json.logout_url")
        for (key, value) in [
            ("auth.json.refresh_url", refreshURL), ("auth.json.login_url", loginURL ?? "https://x"),
            ("auth.json.logout_url", logoutURL ?? "https://x"),
        ] {
            if !(value.hasPrefix("https://") || value.hasPrefix("http://")) || URL(string: value)?.host == nil {
                self.issue(key, "must be an http or https URL (got \"\(value)\")")
            } else if let refusal = PlainHTTP.refusal(url: value, allowInsecure: self.allowInsecureHTTP) {
                self.issue(key, refusal)
            }
        }
        let refreshBody = self.string(ConfigKeys.Auth.JSON.refreshBody) ?? ""
        if !refreshBody.contains("{{refresh_token}}") {
            self.issue("auth.json.refresh_body", "must contain {{refresh_token}}")
        }
        // Unset, it is the refresh body, whose own issue is reported above.
        let logoutBody = self.string("auth.json.logout_body") ?? refreshBody
        if self.string("auth.json.logout_body") != nil, !logoutBody.contains("{{refresh_token}}"),
            !logoutBody.contains("{{access_token}}")
        {
            self.issue("auth.json.logout_body", "must contain {{refresh_token}} or {{access_token}}")
        }
        let loginBody = self.string(ConfigKeys.Auth.JSON.loginBody) ?? ""
        if !loginBody.contains("{{password}}") { self.issue("auth.json.login_body", "must contain {{password}}") }
        var pointers: [String: String?] = [:]
        for descriptor in [
            ConfigKeys.Auth.JSON.accessToken, ConfigKeys.Auth.JSON.refreshToken, ConfigKeys.Auth.JSON.expiresIn,
            ConfigKeys.Auth.JSON.expiresAt,
        ] {
            let key = descriptor.name
            let value = self.string(descriptor)
            // `none` (or `-`): the API gives no such value (refresh_token: none declares a
            // session that ends with its token).
            let none = value == "-" || value?.lowercased() == "none"
            if let value, !none, !value.isEmpty, !value.hasPrefix("/") {
                self.issue(key, "must be a JSON pointer like /session/token, or none (got \"\(value)\")")
            }
            if none && descriptor.name == ConfigKeys.Auth.JSON.accessToken.name {
                self.issue(key, "must be a JSON pointer like /session/token: the answer must hold the access token")
            }
            pointers[key] = none ? nil : value
        }
        return BearerdConfiguration.Auth.JSON(
            loginURL: loginURL,
            refreshURL: refreshURL,
            contentType: self.string(ConfigKeys.Auth.JSON.contentType) ?? "",
            headers: self.pairs(
                ConfigKeys.Auth.JSON.headers,
                separator: ":",
                example: "X-Amz-Target: Service.Operation"
            ),
            loginBody: loginBody,
            refreshBody: refreshBody,
            accessTokenPointer: (pointers[ConfigKeys.Auth.JSON.accessToken.name] ?? nil) ?? "",
            refreshTokenPointer: pointers[ConfigKeys.Auth.JSON.refreshToken.name] ?? nil,
            expiresInPointer: pointers[ConfigKeys.Auth.JSON.expiresIn.name] ?? nil,
            expiresAtPointer: pointers[ConfigKeys.Auth.JSON.expiresAt.name] ?? nil,
            logoutURL: logoutURL,
            logoutBody: logoutBody
        )
    }

    /// A list of `name<separator>value` entries.
    private mutating func pairs(
        _ key: ConfigKeyDescriptor,
        separator: Character,
        example: String
    ) -> [BearerdConfiguration.Auth.Pair] {
        var pairs: [BearerdConfiguration.Auth.Pair] = []
        for entry in self.list(key) {
            // A secret key's entries may hold a credential (an API key header): never echoed.
            let shown = key.isSecret ? "" : " (got \"\(entry)\")"
            guard let index = entry.firstIndex(of: separator) else {
                self.issue(key.name, "each entry must look like \"\(example)\"\(shown)")
                continue
            }
            let name = entry[..<index].trimmingCharacters(in: .whitespaces)
            let value = entry[entry.index(after: index)...].trimmingCharacters(in: .whitespaces)
            if name.isEmpty || name.contains(where: { $0 == " " || $0 == "\r" || $0 == "\n" })
                || value.contains(where: { $0 == "\r" || $0 == "\n" })
            {
                self.issue(key.name, "each entry must look like \"\(example)\"\(shown)")
                continue
            }
            pairs.append(.init(name: name, value: value))
        }
        return pairs
    }
}
