import BearerdAdmin
import BearerdTokens
import Foundation

/// The one-line state systemd shows (`STATUS=`, in `systemctl status bearerd`).
enum StatusLine {
    /// Each session's line, by name when there are several.
    static func text(_ sessions: [(name: String, backend: AdminAPI.Backend)]) async -> String {
        guard sessions.count > 1 else {
            // None, for a moment, while a reload replaces the only session.
            guard let only = sessions.first else { return "changing sessions" }
            return await Self.text(only.backend)
        }
        var parts: [String] = []
        for (name, backend) in sessions { parts.append("\(name): " + (await Self.text(backend))) }
        return parts.joined(separator: " | ")
    }

    static func text(_ backend: AdminAPI.Backend) async -> String {
        if case .perCaller(let sessions, _) = backend {
            return "per caller: \(sessions.uids.count) users with tokens, \(sessions.loadedCount) in memory"
        }
        guard case .engine(let manager) = backend else { return "serving with a static token" }
        let status = await manager.status()
        let state = status.state.text
        var parts = [status.session.map { "\(state), \($0) session" } ?? state]
        if let seconds = status.expiresIn {
            parts.append(seconds > 0 ? "token expires in \(StatusText.span(seconds))" : "token expired")
        }
        if let detail = status.detail, status.state != .ready { parts.append(detail) }
        return PrintableText.of(parts.joined(separator: "; "))
    }
}
