import BearerdAuth
import Foundation
import Synchronization
import Tracing

extension TokenManager {
    /// What the engine talks to: the token API, the store, the fleet's row, the checks, the
    /// clocks. Fixed for the engine's life.
    struct Ports: Sendable {
        var source: any TokenSource
        var transport: any TokenTransport
        var store: any TokenStore
        /// `auth.refresh_token_file`: used when the store (or the fleet's row) was never written.
        var seed: Secret?
        /// The fleet's shared row (`store.backend: postgres`); `nil` for a store of this host's own.
        var fleet: (any SharedSessionStore)?
        /// This host's name, as the fleet's row records who wrote it.
        var fleetHost: String?
        /// `auth.verify`: checks every access token before it is used.
        var verifier: (any TokenVerifier)?
        /// `auth.dpop`: the key the tokens are bound to, kept in the store with them.
        var proofKey: (any ProofKey)?
        /// `tracing.endpoint`: refresh spans; `nil` when tracing is off.
        var tracer: (any Tracer)?
        /// Deadlines are planned on `clock.now`, which a wall-clock step does not move
        /// (``SteadyTokenClock``); wall-clock facts cross over through `clock.wallOffset`.
        var clock: any TokenClock
        /// The machine's clocks, watched for a suspend or a step (``ClockWatch``).
        var clocks: any ClockSource
        var random: @Sendable () -> Double
    }

    /// What the data path and the timer read without a hop to the actor.
    final class Outbox: Sendable {
        /// The token requests may use, and until when.
        let snapshot = Mutex<(token: BearerToken, usableUntil: Date)?>(nil)
        /// When the next attempt at a token happens: now while one is in flight, `retryAt`
        /// while waiting; `nil` otherwise. Read by requests that stop waiting.
        let nextAttempt = Mutex<Date?>(nil)
        /// Wakes the timer when the state changes.
        let changes = ChangeSignal()
    }

    nonisolated var source: any TokenSource { self.ports.source }
    nonisolated var transport: any TokenTransport { self.ports.transport }
    nonisolated var store: any TokenStore { self.ports.store }
    nonisolated var seed: Secret? { self.ports.seed }
    nonisolated var fleet: (any SharedSessionStore)? { self.ports.fleet }
    nonisolated var fleetHost: String? { self.ports.fleetHost }
    nonisolated var verifier: (any TokenVerifier)? { self.ports.verifier }
    nonisolated var proofKey: (any ProofKey)? { self.ports.proofKey }
    nonisolated var tracer: (any Tracer)? { self.ports.tracer }
    nonisolated var clock: any TokenClock { self.ports.clock }
    nonisolated var clocks: any ClockSource { self.ports.clocks }
    nonisolated var changes: ChangeSignal { self.outbox.changes }
    nonisolated func random() -> Double { self.ports.random() }
}
