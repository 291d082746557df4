import BearerdTokens
import Foundation

/// The bodies the admin socket reads and writes: JSON, shared by the daemon and the CLI.
package enum AdminMessages {
    /// `GET /v1/sessions`: each session's status, by name, in the config's order.
    package struct Sessions: Codable, Sendable {
        package struct Entry: Codable, Sendable {
            package var name: String
            package var status: TokenStatus
        }

        /// Whether the config names its sessions (`sessions:`).
        package var named: Bool
        package var sessions: [Entry]
    }

    /// `GET /v1/callers`: the users of a `per_caller` session with tokens here.
    package struct Callers: Codable, Sendable {
        package struct Entry: Codable, Sendable {
            package var uid: UInt32
            /// In memory now; `status` is known only then (listing loads nobody).
            package var loaded: Bool
            package var status: TokenStatus?
        }

        package var callers: [Entry]
    }

    /// `POST /v1/login`: a password login (or a JSON API's sign-in), an imported refresh
    /// token, or the end of a browser login (the redirect's code, state and iss).
    package struct Login: Codable, Sendable {
        package var method: Method
        package var username: String?
        package var password: String?
        package var refreshToken: String?
        package var code: String?
        package var state: String?
        package var issuer: String?

        package enum Method: String, Codable, Sendable {
            case password
            case refreshToken = "refresh_token"
            case authorizationCode = "authorization_code"
        }

        package init(
            method: Method,
            username: String? = nil,
            password: String? = nil,
            refreshToken: String? = nil,
            code: String? = nil,
            state: String? = nil,
            issuer: String? = nil
        ) {
            self.method = method
            self.username = username
            self.password = password
            self.refreshToken = refreshToken
            self.code = code
            self.state = state
            self.issuer = issuer
        }

        enum CodingKeys: String, CodingKey {
            case method, username, password, code, state
            case refreshToken = "refresh_token"
            case issuer = "iss"
        }
    }

    /// `POST /v1/login/authorize`: begin a browser login whose redirect comes to `redirect_uri`.
    package struct Authorize: Codable, Sendable {
        package var redirectURI: String

        package init(redirectURI: String) {
            self.redirectURI = redirectURI
        }

        enum CodingKeys: String, CodingKey {
            case redirectURI = "redirect_uri"
        }
    }

    /// `GET /v1/token`.
    package struct Token: Codable, Sendable {
        package var accessToken: String
        package var tokenType: String

        package init(accessToken: String) {
            self.accessToken = accessToken
            self.tokenType = "Bearer"
        }

        enum CodingKeys: String, CodingKey {
            case accessToken = "access_token"
            case tokenType = "token_type"
        }
    }

    /// `GET /health`.
    package struct Health: Codable, Sendable {
        package var state: TokenStatus.State
        package var expiresIn: Int?
        package var lastRefreshResult: String?
        package var failuresInARow: Int
        package var detail: String?

        enum CodingKeys: String, CodingKey {
            case state, detail
            case expiresIn = "expires_in"
            case lastRefreshResult = "last_refresh_result"
            case failuresInARow = "failures_in_a_row"
        }
    }

    /// Any failure: a short name and a message for a person.
    package struct Failure: Codable, Sendable, Error, CustomStringConvertible {
        package var error: String
        package var message: String

        package init(error: String, message: String) {
            self.error = error
            self.message = message
        }

        package var description: String { self.message }
    }

    /// One line of `POST /v1/login/device`'s answer (newline-delimited JSON): first the prompt,
    /// then the status once logged in, or a failure.
    package struct DeviceEvent: Codable, Sendable {
        package var prompt: DevicePrompt?
        package var status: TokenStatus?
        package var failure: Failure?

        package init(prompt: DevicePrompt? = nil, status: TokenStatus? = nil, failure: Failure? = nil) {
            self.prompt = prompt
            self.status = status
            self.failure = failure
        }
    }

    package static func encode(_ value: some Encodable) -> Data {
        // Every message type encodes; a failure here is a programming error caught by the tests.
        (try? TokenStatus.encoder().encode(value)) ?? Data(#"{"error":"internal","message":"cannot encode"}"#.utf8)
    }
}
