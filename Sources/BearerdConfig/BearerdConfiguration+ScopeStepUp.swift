import BearerdAuth
import BearerdTokens

extension BearerdConfiguration.Auth {
    /// `auth.scope_step_up` and `auth.scope_step_up_allow`: what bearerd does when the API
    /// answers 403 `insufficient_scope` (RFC 6750 §3.1) to a client token.
    package struct ScopeStepUp: Sendable, Equatable {
        /// Ask for a client token with the added scope at once, and retry the request.
        package var enabled: Bool
        /// The scopes that may be asked for so; no other ever is.
        package var allowed: [String]

        package init(enabled: Bool = false, allowed: [String] = []) {
            self.enabled = enabled
            self.allowed = allowed
        }

        init(reading builder: inout ConfigBuilder, source: Source) {
            typealias Keys = ConfigKeys.Auth.ScopeStepUp
            self.enabled = builder.bool(Keys.enabled)
            self.allowed = builder.list(Keys.allow)
            for scope in self.allowed where !ScopeChallenge.isScopeToken(scope) {
                builder.issue(
                    Keys.allow.name,
                    "each entry must be one scope name (RFC 6749 §3.3), got \"\(scope.prefix(80))\""
                )
            }
            guard self.enabled else { return }
            if self.allowed.isEmpty {
                builder.issue(Keys.allow.name, "required with auth.scope_step_up: true: the scopes bearerd may ask for")
            }
            let clientGrant: Bool =
                switch source {
                case .oauth2(let client): client.hasClientGrant
                case .json, .staticFile, .command: false
                }
            if !clientGrant {
                builder.issue(
                    Keys.enabled.name,
                    "applies to a client token (auth.client_credentials or auth.token_exchange): a person's session gets more scope by `bearerd login`"
                )
            }
        }
    }
}

extension ConfigKeys.Auth {
    /// `auth.scope_step_up*`.
    package enum ScopeStepUp {
        static let enabled = ConfigKeyDescriptor.bool(
            "auth.scope_step_up",
            default: false,
            reload: .applies,
            sample: .commented("false"),
            doc: """
                When the API answers 403 with `WWW-Authenticate: Bearer error="insufficient_scope",
                scope="..."` (RFC 6750 §3.1) to a client token (client_credentials or token exchange),
                true: bearerd asks the token server at once for a token with the added scopes (only those
                in scope_step_up_allow, one request at a time, within max_refreshes_per_minute), keeps
                asking for them from then on, and sends the request again once when its body was held, as
                after a 401. Either way the 403 of a request not retried goes to the caller, and `status`
                says what the API asked for; for a person's session the next `bearerd login` asks for it.
                """
        )
        static let allow = ConfigKeyDescriptor.list(
            "auth.scope_step_up_allow",
            "scope names",
            reload: .applies,
            doc: "The scopes scope_step_up may add; an API that asks for any other gets its 403 passed on."
        )
    }
}
