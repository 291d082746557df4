import BearerdTokens
import Foundation
import NIOHTTP1

/// A daemon of several sessions (`sessions:`): each call names the session it is for with
/// `?session=NAME`; `/v1/sessions`, `/health` and `/ready` speak of all of them.
extension AdminAPI {
    /// Why a call names no session this daemon has.
    struct SessionRefusal: Error {
        let response: Response
    }

    /// This API for the session `path` names (`?session=NAME`), or for the only one.
    func scoped(_ path: String) -> Result<AdminAPI, SessionRefusal> {
        let sessions = self.sessions
        let route = Self.route(path)
        guard !sessions.isEmpty else {
            // No session runs (a reload is replacing them, or the one it added failed): the
            // daemon's own routes still answer, a reload first of all, which can mend it.
            if route == "/v1/sessions" || Self.isDaemonWide(route) { return .success(self) }
            return .failure(SessionRefusal(response: Self.failure(.serviceUnavailable, Self.noSessionNow)))
        }
        let names = sessions.map(\.name).joined(separator: ", ")
        guard let name = Self.session(in: path) else {
            if sessions.count == 1 || route == "/v1/sessions" || Self.isDaemonWide(route) {
                var api = self
                if let only = sessions.first { api.backend = only.backend }
                return .success(api)
            }
            return .failure(
                SessionRefusal(
                    response: Self.failure(
                        .badRequest,
                        "session_required",
                        "this daemon has several sessions (\(names)): name one with --session NAME"
                    )
                )
            )
        }
        guard let found = sessions.first(where: { $0.name == name }) else {
            return .failure(
                SessionRefusal(
                    response: Self.failure(
                        .notFound,
                        "no_such_session",
                        "no session here is named so: there are \(names)"
                    )
                )
            )
        }
        var api = self
        api.backend = found.backend
        api.chosen = true
        return .success(api)
    }

    /// Routes that are the daemon's, not a session's: `/health` and `/ready` without a session
    /// speak for all of them.
    private static func isDaemonWide(_ route: String) -> Bool {
        ["/metrics", "/v1/reload", "/health", "/ready"].contains(route)
    }

    /// The `session` query parameter's value, when there is one (at most 64 bytes are looked at).
    static func session(in path: String) -> String? {
        Self.parameter("session", in: path)
    }

    /// `POST /v1/login/device` for the session `path` names: sends the prompt, then the
    /// outcome, one JSON line each.
    package func deviceLogin(
        path: String,
        asker: Asker = .trusted,
        send: @escaping @Sendable (Data) async throws -> Void
    ) async {
        let refusal: Response
        switch self.scoped(path) {
        case .success(let api):
            let answer = await api.authorized(path: path, asker: asker) { api in
                await api.deviceLogin(send: send)
                return Response(status: .ok, body: Data())
            }
            guard answer.status != .ok else { return }
            refusal = answer
        case .failure(let scoped):
            refusal =
                asker.isPrivileged || scoped.response.status == .serviceUnavailable
                ? scoped.response : Self.unnamedSession
        }
        let failure = (try? JSONDecoder().decode(AdminMessages.Failure.self, from: refusal.body))
        try? await send(Self.line(AdminMessages.DeviceEvent(failure: failure ?? Self.noSession)))
    }

    /// `GET /v1/sessions`: every session's status, by name, in order.
    func sessionList() async -> AdminMessages.Sessions {
        var entries: [AdminMessages.Sessions.Entry] = []
        for (name, backend) in self.sessions {
            var api = self
            api.backend = backend
            entries.append(.init(name: name, status: await api.status()))
        }
        return AdminMessages.Sessions(named: self.named, sessions: entries)
    }

    /// `/health` of a daemon of several sessions: each one's, by name.
    func healthBySession() async -> [String: AdminMessages.Health] {
        var health: [String: AdminMessages.Health] = [:]
        for (name, backend) in self.sessions {
            var api = self
            api.backend = backend
            health[name] = await api.health()
        }
        return health
    }

    /// `/ready` of a daemon of several sessions: 200 while every session has a valid token;
    /// otherwise 503 naming those that have none (`?session=NAME` asks of one).
    func everyReady() async -> Response {
        var waiting: [String] = []
        for (name, backend) in self.sessions {
            var api = self
            api.backend = backend
            if await api.ready().status != .ok { waiting.append(name) }
        }
        if waiting.isEmpty { return .init(status: .ok, body: Data(#"{"ready":true}"#.utf8)) }
        return Self.failure(
            .serviceUnavailable,
            "not_ready",
            "no valid token in session \(waiting.joined(separator: ", ")): see bearerd status"
        )
    }
}
