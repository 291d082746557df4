import BearerdTokens
import Foundation

/// The bodies the admin socket reads and writes: JSON, shared by the daemon and the CLI.
public enum AdminMessages {
    /// `POST /v1/login`: a password login (or a JSON API's sign-in), or an imported refresh
    /// token.
    public struct Login: Codable, Sendable {
        public var method: Method
        public var username: String?
        public var password: String?
        public var refreshToken: String?

        public enum Method: String, Codable, Sendable {
            case password
            case refreshToken = "refresh_token"
        }

        public init(method: Method, username: String? = nil, password: String? = nil, refreshToken: String? = nil) {
            self.method = method
            self.username = username
            self.password = password
            self.refreshToken = refreshToken
        }

        enum CodingKeys: String, CodingKey {
            case method, username, password
            case refreshToken = "refresh_token"
        }
    }

    /// `GET /v1/token`.
    public struct Token: Codable, Sendable {
        public var accessToken: String
        public var tokenType: String

        public init(accessToken: String) {
            self.accessToken = accessToken
            self.tokenType = "Bearer"
        }

        enum CodingKeys: String, CodingKey {
            case accessToken = "access_token"
            case tokenType = "token_type"
        }
    }

    /// `GET /health`.
    public struct Health: Codable, Sendable {
        public var state: TokenStatus.State
        public var expiresIn: Int?
        public var lastRefreshResult: String?
        public var failuresInARow: Int
        public var detail: String?

        enum CodingKeys: String, CodingKey {
            case state, detail
            case expiresIn = "expires_in"
            case lastRefreshResult = "last_refresh_result"
            case failuresInARow = "failures_in_a_row"
        }
    }

    /// Any failure: a short name and a message for a person.
    public struct Failure: Codable, Sendable, Error, CustomStringConvertible {
        public var error: String
        public var message: String

        public init(error: String, message: String) {
            self.error = error
            self.message = message
        }

        public var description: String { self.message }
    }

    /// One line of `POST /v1/login/device`'s answer (newline-delimited JSON): first the prompt,
    /// then the status once logged in, or a failure.
    public struct DeviceEvent: Codable, Sendable {
        public var prompt: DevicePrompt?
        public var status: TokenStatus?
        public var failure: Failure?

        public init(prompt: DevicePrompt? = nil, status: TokenStatus? = nil, failure: Failure? = nil) {
            self.prompt = prompt
            self.status = status
            self.failure = failure
        }
    }

    public static func encode(_ value: some Encodable) -> Data {
        // Every message type encodes; a failure here is a programming error caught by the tests.
        (try? TokenStatus.encoder().encode(value)) ?? Data(#"{"error":"internal","message":"cannot encode"}"#.utf8)
    }
}
