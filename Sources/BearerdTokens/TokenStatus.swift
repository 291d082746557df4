import BearerdAuth
import Foundation

/// What `bearerd status` shows: the state of the session and of its refreshes. It holds no
/// token, by construction: no field can carry one.
package struct TokenStatus: Sendable, Codable, Equatable {
    /// Where the session is; written as `ready`, `refreshing`, `waiting`, `logged_out` or
    /// `static` in JSON.
    package var state: State
    /// `user` or `client`, when there is a session.
    package var session: String?
    /// The access token's `sub`, when it is a JWT.
    package var subject: String?
    package var scope: String?
    package var expiresAt: Date?
    package var nextRefreshAt: Date?
    package var lastRefreshAt: Date?
    package var lastRefreshGrant: String?
    /// `ok`, `rejected (CODE)` or `failed: WHY`.
    package var lastRefreshResult: String?
    package var failuresInARow: Int
    /// Why there is no token, or why refreshes fail.
    package var detail: String?
    /// Whether the last change is not on disk yet (the store could not be written).
    package var storeBehind: Bool
    /// When this status was taken: times left are counted from here.
    package var now: Date
    /// Whether a daemon answered (filled in by the CLI).
    package var daemon: String?
    /// The fleet's shared session (`store.backend: postgres`).
    package var fleet: FleetStatus?
    /// Where the client's token comes from, when it is exchanged from the platform's token.
    package var clientGrant: ClientGrantStatus?
    /// Whether a request would be sent with a token now (the daemon's word); `false` while the
    /// token server fails and the last token has expired: requests get 503.
    package var tokenUsable: Bool?
    /// What the API last asked for beyond the token (403 `insufficient_scope`, RFC 9470).
    package var apiAsks: APIAsks?
    /// `auth.discover`: the authorization server found from the API, and the client registered.
    package var discovered: Discovered?

    /// What `auth.discover` found. A client id, never a secret.
    package struct Discovered: Sendable, Codable, Equatable {
        package var resource: String
        package var issuer: String?
        package var clientID: String?
        /// Whether bearerd registered the client itself (RFC 7591).
        package var registered: Bool

        package init(resource: String, issuer: String?, clientID: String?, registered: Bool) {
            self.resource = resource
            self.issuer = issuer
            self.clientID = clientID
            self.registered = registered
        }

        enum CodingKeys: String, CodingKey {
            case resource, issuer, registered
            case clientID = "client_id"
        }
    }

    /// The fleet's row as this host last saw it. A host name, never a token.
    package struct FleetStatus: Sendable, Codable, Equatable {
        /// The row version the session in hand came from.
        package var version: Int64?
        /// The host that wrote that version.
        package var writtenBy: String?
        /// Why the store cannot be used right now; `nil` while it answers.
        package var problem: String?
        /// Whether tokens issued here are not in the row yet.
        package var behind: Bool

        enum CodingKeys: String, CodingKey {
            case version, problem, behind
            case writtenBy = "written_by"
        }
    }

    /// Where the session is.
    package enum State: String, Sendable, Codable, Equatable {
        /// A valid token is in hand.
        case ready
        /// A refresh is under way.
        case refreshing
        /// The token server failed; bearerd retries at `next_refresh_at`.
        case waiting
        /// There is no session: someone has to run `bearerd login`.
        case loggedOut = "logged_out"
        /// The token comes from `auth.static_token_file`: there is no session to manage.
        case `static`
        /// `per_caller`: each local user has tokens of their own.
        case perCaller = "per_caller"

        /// For people: `logged out`.
        package var text: String { self.rawValue.replacingOccurrences(of: "_", with: " ") }
    }

    package init(state: State, failuresInARow: Int = 0, storeBehind: Bool = false, now: Date) {
        self.state = state
        self.failuresInARow = failuresInARow
        self.storeBehind = storeBehind
        self.now = now
    }

    enum CodingKeys: String, CodingKey {
        case state, session, subject, scope, detail, now, daemon, fleet
        case clientGrant = "client_grant"
        case tokenUsable = "token_usable"
        case apiAsks = "api_asks"
        case discovered
        case expiresAt = "expires_at"
        case nextRefreshAt = "next_refresh_at"
        case lastRefreshAt = "last_refresh_at"
        case lastRefreshGrant = "last_refresh_grant"
        case lastRefreshResult = "last_refresh_result"
        case failuresInARow = "failures_in_a_row"
        case storeBehind = "store_behind"
    }

    /// Seconds until the access token expires (negative once it has).
    package var expiresIn: Int? {
        self.expiresAt.map { Int($0.timeIntervalSince(self.now).rounded(.down)) }
    }

    /// JSON with RFC 3339 times, as the admin socket and `status --json` write it.
    package static func encoder() -> JSONEncoder {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        encoder.outputFormatting = [.sortedKeys]
        return encoder
    }

    package static func decoder() -> JSONDecoder {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        return decoder
    }
}

extension TokenManager {
    /// Every time in it is on the wall clock, as people read it: the engine's own times moved by
    /// ``TokenClock/wallOffset``.
    package func status() -> TokenStatus {
        let wallOffset = self.clock.wallOffset
        let wall = { (date: Date) in date.addingTimeInterval(wallOffset) }
        let now = wall(self.clock.now)
        var status = TokenStatus(
            state: .ready,
            failuresInARow: self.machine.retry.failures,
            storeBehind: self.storeBehind,
            now: now
        )
        switch self.state {
        case .ready(let session):
            status.state = .ready
            if session.refreshToken == nil && !self.source.hasClientGrant {
                let formatter = ISO8601DateFormatter()
                status.detail =
                    "this session has no refresh token: run `bearerd login` again before \(formatter.string(from: wall(session.expiresAt)))"
            } else {
                status.nextRefreshAt = wall(session.refreshAt)
            }
        case .refreshing:
            status.state = .refreshing
        case .waiting(_, let retryAt, let reason):
            status.state = .waiting
            status.nextRefreshAt = wall(retryAt)
            status.detail = reason
        case .loggedOut(let reason):
            status.state = .loggedOut
            status.detail = reason
        }
        if let session = self.currentSession {
            status.session = session.kind.rawValue
            status.scope = session.scope
            if let access = session.access {
                status.subject = JWTClaims.subject(of: access.value)
                status.expiresAt = wall(session.expiresAt)
            }
        }
        if self.fleet != nil {
            status.fleet = TokenStatus.FleetStatus(
                version: self.fleetRow.version,
                writtenBy: self.fleetRow.writtenBy,
                problem: self.fleetRow.problem,
                behind: self.fleetRow.behind
            )
        }
        status.clientGrant = self.source.clientGrantStatus(now: now)
        status.tokenUsable = self.currentToken() != nil
        status.apiAsks = self.scopeRequests.last
        status.discovered = self.source.discovered
        if var asks = status.apiAsks, let asked = asks.scope, let scope = self.currentSession?.scope {
            let has = Set(scope.split(separator: " "))
            if asked.split(separator: " ").allSatisfy(has.contains), !asks.action.hasPrefix("granted") {
                asks.action = "granted: the session has it now"
                status.apiAsks = asks
            }
        }
        if let last = self.lastRefresh {
            status.lastRefreshAt = wall(last.at)
            status.lastRefreshGrant = last.grant
            status.lastRefreshResult = last.result
        }
        status.detail = status.detail.map { self.namingSession($0) }
        return status
    }
}
