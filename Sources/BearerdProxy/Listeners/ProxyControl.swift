import BearerdSockets
import BearerdWire
import NIOConcurrencyHelpers
import Synchronization

/// A handle on the running proxy for reloads: ``ProxyServer`` fills it in once it listens.
package final class ProxyControl: Sendable {
    private let listeners = Mutex<ProxyListeners?>(nil)

    package init() {}

    func attach(_ listeners: ProxyListeners?) {
        self.listeners.withLock { $0 = listeners }
    }

    /// Serves new connections with `settings` (upstream, timeouts, limits, listeners).
    /// - Throws: when a new listener cannot be bound; then nothing changed.
    package func reload(settings: ProxySettings) async throws {
        guard let listeners = self.listeners.withLock({ $0 }) else {
            throw ProxyError.setup("the proxy is not listening yet")
        }
        try await listeners.reload(settings: settings)
    }

    /// Who the listeners admit now (`nil` before they listen): a `per_caller` session's admin
    /// calls admit the same users.
    package var admission: CallerAdmission? {
        self.listeners.withLock { $0?.state.withLockedValue { $0.generation.settings.admission } }
    }

    /// The addresses listened on now.
    package var addresses: [String] {
        self.listeners.withLock { $0?.addresses.map(\.bearerdDescription) ?? [] }
    }
}
