import BearerdSockets
import BearerdTokens
import Foundation
import Logging
import NIOHTTP1
import NIOPosix

#if canImport(Glibc)
import Glibc
#endif

/// Who may make which admin call. The daemon's own user and root may make every call. Another
/// local user reaches the admin socket only when a session has `per_caller: true` and its lists
/// name them, and may then log in, log out and read `status` and `token` of that session: their
/// own tokens, by the uid the kernel gives (`SO_PEERCRED`), never one they name.
extension AdminAPI {
    /// Who makes a call.
    package enum Asker: Sendable {
        /// A verb served in process, or a test: the CLI's own user, who opened the store itself.
        case trusted
        /// The admin socket's peer, as the kernel names it.
        case peer(Caller)

        /// Root or bearerd's own user.
        var isPrivileged: Bool {
            switch self {
            case .trusted: true
            case .peer(let caller): caller.uid == 0 || caller.uid == getuid()
            }
        }

        /// The uid whose tokens the call is for, unless root names another.
        var uid: UInt32 {
            switch self {
            case .trusted: getuid()
            case .peer(let caller): caller.uid
            }
        }
    }

    /// Whether a `per_caller` session runs now: only then may other users connect.
    package var servesCallers: Bool {
        self.sessions.contains { if case .perCaller = $0.backend { true } else { false } }
    }

    /// The routes a user may call on a `per_caller` session, for their own tokens.
    static let ownTokenRoutes: Set<String> = [
        "/v1/status", "/v1/token", "/v1/login", "/v1/login/authorize", "/v1/login/device", "/v1/logout",
    ]

    /// Runs `body` with this API's session resolved for `asker`: on a `per_caller` session, the
    /// asker's own tokens (root and bearerd's user may name another uid with `?uid=UID`), held in
    /// memory while the call runs; or answers why the call is refused.
    func authorized(
        path: String,
        asker: Asker,
        _ body: @Sendable (AdminAPI) async -> Response
    ) async -> Response {
        let route = Self.route(path)
        let privileged = asker.isPrivileged
        guard case .perCaller(let sessions, let admits)? = self.backend, Self.ownTokenRoutes.contains(route) else {
            if privileged { return await body(self) }
            return Self.forbidden(
                "only root and bearerd's own user may call \(route)\(self.backend == nil ? "" : " of this session"): other local users may log in, log out and read status and token of a per_caller session, for their own tokens"
            ).response
        }
        if case .peer(let caller) = asker, !privileged {
            // The account's groups may be looked up: off the async pool's few threads.
            let admitted = (try? await NIOThreadPool.singleton.runIfActive { admits(caller) }) ?? false
            guard admitted else {
                return Self.forbidden(
                    "uid \(caller.uid) is not one this session serves: ask its administrator to list you in socket_allow_uids or socket_allow_gids"
                ).response
            }
        }
        let own = asker.uid
        var uid = own
        if let asked = Self.parameter("uid", in: path) {
            guard let number = UInt32(asked) else {
                return Self.failure(.badRequest, "bad_request", "uid must be a number")
            }
            guard privileged || number == own else {
                return Self.forbidden("only root and bearerd's own user may act on another user's tokens").response
            }
            uid = number
        }
        // A login makes the user's store; nobody logs in as another (root neither).
        let login = route.hasPrefix("/v1/login")
        if login && uid != own {
            return Self.forbidden("a user logs in as themselves only: run bearerd login as uid \(uid)").response
        }
        do {
            // A browser login waits up to auth.login_timeout (at most an hour) for its code: the
            // user stays loaded as long, or the pending login would go with an unload.
            let keep: Duration? = route == "/v1/login/authorize" ? .seconds(3630) : nil
            return try await sessions.withManager(for: uid, create: login, keep: keep) { manager in
                var api = self
                api.backend = manager.map { .engine($0) } ?? .noTokens(uid: uid, hint: sessions.loginHint)
                return await body(api)
            }
        } catch {
            self.logger.error(
                "cannot open a caller's token store",
                metadata: ["caller_uid": "\(uid)", "error": "\(error)"]
            )
            return Self.failure(
                .serviceUnavailable,
                "store_unavailable",
                "cannot open the token store of uid \(uid): \(error)"
            )
        }
    }

    /// `GET /v1/callers`: each uid of a `per_caller` session with tokens here, and their state
    /// when they are in memory (listing does not load anyone).
    func callerList() async -> Response {
        guard case .perCaller(let sessions, _)? = self.backend else {
            return Self.failure(.conflict, "not_per_caller", "this session is not per_caller: it has no users to list")
        }
        var entries: [AdminMessages.Callers.Entry] = []
        for uid in sessions.uids.prefix(10_000) {
            let status = await sessions.loadedStatus(uid)
            entries.append(.init(uid: uid, loaded: status != nil, status: status))
        }
        return .init(status: .ok, body: AdminMessages.encode(AdminMessages.Callers(callers: entries)))
    }

    static func forbidden(_ message: String) -> SessionRefusal {
        SessionRefusal(response: Self.failure(.forbidden, "forbidden", message))
    }

    /// The value of the query parameter `name`, when there is one (at most 64 bytes are looked at).
    static func parameter(_ name: String, in path: String) -> String? {
        guard let query = path.firstIndex(of: "?") else { return nil }
        for pair in path[path.index(after: query)...].prefix(256).split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            if parts.count == 2, parts[0] == name { return String(parts[1].prefix(64)) }
        }
        return nil
    }
}
