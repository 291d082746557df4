import BearerdAuth
import Foundation

/// What the API asked for beyond the token it got (403 `insufficient_scope`, RFC 9470), and
/// what bearerd did about it: shown by `status`, asked for at the next login, and — for a
/// client token under `auth.scope_step_up` — added to the client grant.
package struct APIAsks: Sendable, Codable, Equatable {
    /// `insufficient_scope` or `insufficient_user_authentication`.
    package var error: String
    /// Every scope asked for since start, space-separated.
    package var scope: String?
    package var acrValues: String?
    package var maxAge: Int?
    /// The path of the last request that was refused so (its first segment only).
    package var path: String
    package var at: Date
    /// What bearerd does about it, for a person.
    package var action: String

    enum CodingKeys: String, CodingKey {
        case error, scope, path, at, action
        case acrValues = "acr_values"
        case maxAge = "max_age"
    }
}

/// The engine's memory of what the API asked for.
struct ScopeRequests: Sendable {
    /// Every scope the API asked for since start, in the order first asked.
    private(set) var asked: [String] = []
    private(set) var acrValues: [String] = []
    private(set) var maxAge: Int?
    /// The last ask, for `status`.
    private(set) var last: APIAsks?
    /// Scopes the client grant asks for beyond `auth.scopes`: added by a step-up, kept.
    private(set) var clientAdded: [String] = []
    /// Scopes the token server refused or did not grant when asked: not asked again before.
    private var pausedUntil: [String: Date] = [:]
    static let pause: TimeInterval = 300
    static let maxAsked = 64

    /// Notes a challenge from the API at `at` (wall clock) for a request to `path`; whether it
    /// asks for anything not asked before.
    @discardableResult
    mutating func note(_ challenge: ScopeChallenge, path: String, at: Date, action: String) -> Bool {
        let news =
            self.last == nil || challenge.scopes.contains { !self.asked.contains($0) }
            || (!challenge.acrValues.isEmpty && challenge.acrValues != self.acrValues)
            || (challenge.maxAge != nil && challenge.maxAge != self.maxAge)
        for scope in challenge.scopes where !self.asked.contains(scope) && self.asked.count < Self.maxAsked {
            self.asked.append(scope)
        }
        if !challenge.acrValues.isEmpty { self.acrValues = challenge.acrValues }
        if let maxAge = challenge.maxAge { self.maxAge = maxAge }
        self.last = APIAsks(
            error: challenge.kind.rawValue,
            scope: self.asked.isEmpty ? nil : self.asked.joined(separator: " "),
            acrValues: self.acrValues.isEmpty ? nil : self.acrValues.joined(separator: " "),
            maxAge: self.maxAge,
            path: PathPrefix.of(path),
            at: at,
            action: action
        )
        return news
    }

    /// A login happened: what the API asked of the person's login (RFC 9470) is met, and the
    /// next login does not ask it again.
    mutating func loggedIn() {
        self.acrValues = []
        self.maxAge = nil
    }

    /// The scopes of `challenge` a step-up may ask for now: not granted yet (`granted`), allowed,
    /// and not refused lately. `nil` with the reason when none.
    func stepUp(
        _ challenge: ScopeChallenge,
        granted: Set<String>,
        allowed: Set<String>,
        now: Date
    ) -> Result<[String], StepUpRefusal> {
        guard challenge.kind == .insufficientScope else { return .failure(.notAScope) }
        guard !challenge.scopes.isEmpty else { return .failure(.unnamed) }
        let missing = challenge.scopes.filter { !granted.contains($0) }
        guard !missing.isEmpty else { return .failure(.alreadyGranted) }
        let outside = missing.filter { !allowed.contains($0) }
        guard outside.isEmpty else { return .failure(.notAllowed(outside)) }
        if let paused = missing.first(where: { (self.pausedUntil[$0] ?? .distantPast) > now }) {
            return .failure(.paused(paused))
        }
        return .success(missing)
    }

    mutating func added(_ scopes: [String]) {
        for scope in scopes where !self.clientAdded.contains(scope) { self.clientAdded.append(scope) }
    }

    /// The token server did not grant `scopes`: they leave the client grant and wait.
    mutating func refused(_ scopes: [String], now: Date) {
        self.clientAdded.removeAll { scopes.contains($0) }
        for scope in scopes { self.pausedUntil[scope] = now.addingTimeInterval(Self.pause) }
    }

    mutating func setAction(_ action: String) {
        self.last?.action = action
    }

    /// The union, in order, without repeats.
    static func union(_ lists: [String]...) -> [String] {
        var result: [String] = []
        for list in lists { for item in list where !result.contains(item) { result.append(item) } }
        return result
    }
}

/// Why a step-up is not asked for.
enum StepUpRefusal: Error, Equatable {
    case notAScope
    case unnamed
    case alreadyGranted
    case notAllowed([String])
    case paused(String)

    var reason: String {
        switch self {
        case .notAScope: "it asks for a stronger login, which a client token cannot give"
        case .unnamed: "it does not say which scope (no scope= in its WWW-Authenticate)"
        case .alreadyGranted: "the token already has every scope it asks for"
        case .notAllowed(let scopes):
            "\(scopes.joined(separator: " ")) is not in auth.scope_step_up_allow"
        case .paused(let scope):
            "the token server did not grant \(scope) a moment ago"
        }
    }
}
