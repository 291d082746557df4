import Synchronization

/// The sessions a daemon runs now, by name, in order: what the admin socket, the metrics and
/// systemd's status line ask of. A reload adds and removes entries as sessions start and stop.
package final class SessionDirectory: Sendable {
    private let entries: Mutex<[(name: String, backend: AdminAPI.Backend)]>

    package init(_ entries: [(name: String, backend: AdminAPI.Backend)]) {
        self.entries = Mutex(entries)
    }

    /// Every session now, in order.
    package var all: [(name: String, backend: AdminAPI.Backend)] { self.entries.withLock { $0 } }

    /// Adds `name` (in name order), or replaces its backend.
    package func set(_ name: String, _ backend: AdminAPI.Backend) {
        self.entries.withLock { entries in
            entries.removeAll { $0.name == name }
            entries.append((name, backend))
            entries.sort { $0.name < $1.name }
        }
    }

    package func remove(_ name: String) {
        self.entries.withLock { $0.removeAll { $0.name == name } }
    }
}
