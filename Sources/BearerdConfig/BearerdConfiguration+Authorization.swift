import BearerdAuth
import BearerdTokens
import Foundation

extension BearerdConfiguration.Auth {
    /// The keys of a browser login: ``AuthorizationSettings``, owned by the token engine.
    package typealias Authorization = AuthorizationSettings
}

extension AuthorizationSettings {
    init(reading builder: inout ConfigBuilder) {
        typealias Keys = ConfigKeys.Auth.Authorization
        self.init()
        if let url = builder.string(Keys.url) {
            builder.checkHTTPURL(
                url,
                key: Keys.url.name,
                expected: "an http or https URL without a fragment",
                fragmentAllowed: false
            )
            self.url = url
        }
        self.redirectPort = builder.count(Keys.redirectPort)
        self.timeout = builder.duration(Keys.timeout)
        self.resources = builder.list(Keys.resource)
        for resource in self.resources {
            // RFC 8707 §2: an absolute URI without a fragment.
            let parsed = URL(string: resource)
            if parsed?.scheme == nil || parsed?.host == nil || resource.contains("#") || resource.utf8.count > 2048 {
                builder.issue(
                    Keys.resource.name,
                    "each resource must be an absolute URI without a fragment (got \"\(resource.prefix(80))\")"
                )
            }
        }
        self.parameters = builder.pairs(Keys.parameters, separator: "=", example: "prompt=consent")
        let reserved: Set = [
            "response_type", "client_id", "redirect_uri", "state", "code_challenge", "code_challenge_method",
            "scope", "resource",
        ]
        for pair in self.parameters where reserved.contains(pair.name) {
            builder.issue(
                Keys.parameters.name,
                "\(pair.name) is set by bearerd (scope from auth.scopes, resource from auth.resource): remove it"
            )
        }
    }
}

extension ConfigKeys.Auth {
    /// `auth.*` keys of the browser login.
    package enum Authorization {
        static let url = ConfigKeyDescriptor.text(
            "auth.authorization_url",
            "an https URL",
            reload: .restart,
            sample: .commented("https://auth.example.com/oauth/authorize"),
            doc: """
                `bearerd login` opens this in a browser (the authorization code grant with PKCE, RFC 7636,
                and a redirect to a port on 127.0.0.1, RFC 8252); with `issuer`, the discovered
                authorization_endpoint is used when this is not set. The client must be registered with
                the redirect URI http://127.0.0.1/callback (any port, as RFC 8252 §7.3 allows) or, with
                redirect_port, http://127.0.0.1:PORT/callback.
                """
        )
        static let redirectPort = ConfigKeyDescriptor(
            "auth.redirect_port",
            .count(0...65535),
            default: "0",
            reload: .applies,
            doc: """
                The port `bearerd login` listens on for the browser's redirect: 0 (the default) takes any
                free port; set one for a token server that registers a fixed port, or to forward it from
                another machine (`ssh -L PORT:127.0.0.1:PORT host`). Read by each `bearerd login`.
                """
        )
        static let timeout = ConfigKeyDescriptor.duration(
            "auth.login_timeout",
            default: "5m",
            within: .seconds(10)...(.seconds(3600)),
            reload: .applies,
            doc: """
                How long `bearerd login` waits for the browser to come back; then nothing is stored. Read
                by each `bearerd login`.
                """
        )
        static let resource = ConfigKeyDescriptor.list(
            "auth.resource",
            "absolute URIs",
            reload: .restart,
            doc: """
                RFC 8707 resource indicators: where the tokens are to be used, sent as `resource` with the
                browser login and with every token request. None by default.
                """
        )
        static let parameters = ConfigKeyDescriptor.list(
            "auth.authorization_params",
            "name=value pairs",
            reload: .restart,
            doc: """
                Extra fields for the authorization URL the browser opens (it is not secret: it passes
                through the browser), e.g. ["prompt=consent", "access_type=offline"]. auth.extra_params
                go to the token endpoint only.
                """
        )
    }
}
