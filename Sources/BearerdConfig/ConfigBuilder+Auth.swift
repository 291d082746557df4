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
        let dpop = self.bool("auth.dpop", default: false)
        if dpop {
            switch source {
            case .oauth2: break
            case .staticFile:
                self.issue("auth.dpop", "does not apply to a static token: a DPoP token is issued for bearerd's key")
            case .json:
                self.issue("auth.dpop", "applies to an OAuth 2.0 token server (auth.token_url or auth.issuer) only")
            }
        }
        let maxRefreshes = self.count("auth.max_refreshes_per_minute", default: 30)
        return BearerdConfiguration.Auth(
            allowInsecureHTTP: self.allowInsecureHTTP,
            source: source,
            refreshTokenFile: refreshTokenFile,
            caFile: caFile,
            tlsClientCertificate: tlsClientCertificate,
            verify: verify,
            dpop: dpop,
            requestTimeout: self.duration(
                "auth.request_timeout",
                default: .seconds(10),
                within: .milliseconds(100)...(.seconds(300))
            ),
            connectTimeout: self.duration(
                "auth.connect_timeout",
                default: .seconds(2),
                within: .milliseconds(10)...(.seconds(60))
            ),
            leeway: self.duration("auth.leeway", default: .seconds(30), within: .zero...(.seconds(3600))),
            refreshMargin: self.duration(
                "auth.refresh_margin",
                default: .seconds(60),
                within: .seconds(1)...(.seconds(86_400))
            ),
            defaultLifetime: self.duration(
                "auth.default_lifetime",
                default: .seconds(3600),
                within: .seconds(1)...(.seconds(30 * 86_400))
            ),
            maxRefreshesPerMinute: max(1, maxRefreshes)
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
        let written = (self.string("auth.client_auth") ?? (secretFile == nil ? "none" : "client_secret_basic"))
            .lowercased()
        let parsed = ClientAuthentication(rawValue: written)
        let authentication = parsed ?? .clientSecretBasic
        if parsed == nil {
            let methods = ClientAuthentication.allCases.map(\.rawValue).joined(separator: ", ")
            self.issue("auth.client_auth", "must be one of \(methods) (got \"\(written)\")")
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
            scopes: self.reader.stringArray(forKey: "auth.scopes") ?? [],
            extraParameters: self.pairs("auth.extra_params", separator: "=", example: "audience=https://api.example"),
            clientCredentials: self.bool("auth.client_credentials", default: false),
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
        let refreshBody = self.string("auth.json.refresh_body") ?? #"{"refreshToken":"{{refresh_token}}"}"#
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
        let loginBody = self.string("auth.json.login_body") ?? #"{"email":"{{username}}","password":"{{password}}"}"#
        if !loginBody.contains("{{password}}") { self.issue("auth.json.login_body", "must contain {{password}}") }
        var pointers: [String: String?] = [:]
        for (key, fallback) in [
            ("auth.json.access_token", "/session/token"), ("auth.json.refresh_token", "/session/refreshToken"),
            ("auth.json.expires_in", nil), ("auth.json.expires_at", "/session/expiresAt"),
        ] {
            let value = self.string(key) ?? fallback
            // `none` (or `-`): the API gives no such value (refresh_token: none declares a
            // session that ends with its token).
            let none = value == "-" || value?.lowercased() == "none"
            if let value, !none, !value.isEmpty, !value.hasPrefix("/") {
                self.issue(key, "must be a JSON pointer like /session/token, or none (got \"\(value)\")")
            }
            pointers[key] = none ? nil : value
        }
        return BearerdConfiguration.Auth.JSON(
            loginURL: loginURL,
            refreshURL: refreshURL,
            contentType: self.string("auth.json.content_type") ?? "application/json",
            headers: self.pairs("auth.json.headers", separator: ":", example: "X-Amz-Target: Service.Operation"),
            loginBody: loginBody,
            refreshBody: refreshBody,
            accessTokenPointer: (pointers["auth.json.access_token"] ?? nil) ?? "/session/token",
            refreshTokenPointer: pointers["auth.json.refresh_token"] ?? nil,
            expiresInPointer: pointers["auth.json.expires_in"] ?? nil,
            expiresAtPointer: pointers["auth.json.expires_at"] ?? nil,
            logoutURL: logoutURL,
            logoutBody: logoutBody
        )
    }

    /// A list of `name<separator>value` entries.
    private mutating func pairs(
        _ key: String,
        separator: Character,
        example: String
    ) -> [BearerdConfiguration.Auth.Pair] {
        var pairs: [BearerdConfiguration.Auth.Pair] = []
        for entry in self.reader.stringArray(forKey: ConfigKey(key)) ?? [] {
            guard let index = entry.firstIndex(of: separator) else {
                self.issue(key, "each entry must look like \"\(example)\" (got \"\(entry)\")")
                continue
            }
            let name = entry[..<index].trimmingCharacters(in: .whitespaces)
            let value = entry[entry.index(after: index)...].trimmingCharacters(in: .whitespaces)
            if name.isEmpty || name.contains(where: { $0 == " " || $0 == "\r" || $0 == "\n" })
                || value.contains(where: { $0 == "\r" || $0 == "\n" })
            {
                self.issue(key, "each entry must look like \"\(example)\" (got \"\(entry)\")")
                continue
            }
            pairs.append(.init(name: name, value: value))
        }
        return pairs
    }
}
