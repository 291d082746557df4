import BearerdAuth
import Foundation
import Logging
import Metrics

/// Fleet mode (`store.backend: postgres`): the session lives in a row several bearerd share, and
/// every change of it happens under the fleet's refresh lock, after reading the row again. A host
/// that finds a newer version there than the one it has adopts it instead of refreshing, so a
/// rotated refresh token is sent once for the whole fleet.
extension TokenManager {
    /// The body of the one refresh (or login) task in fleet mode. Without the lock nothing is
    /// sent: a lone refresh is exactly the reuse the lock prevents.
    func performShared(_ grant: Grant?, reason: RefreshReason) async -> AttemptResult {
        guard let fleet = self.fleet else { return .failed("no fleet store") }
        let outcome: Result<AttemptResult, any Error>
        do {
            outcome = .success(
                try await fleet.withRefreshLock { row, lease in
                    await self.underLock(grant, reason: reason, row: row, lease: lease)
                }
            )
        } catch {
            outcome = .failure(error)
        }
        switch outcome {
        case .success(let result):
            return result
        case .failure(let error):
            return self.withoutLock(error, login: grant?.isLogin == true)
        }
    }

    /// The fleet's store could not be had: keep the token until it really expires, retry later.
    /// `keep`: the session to serve meanwhile, when the row gave a newer one than the state's.
    private func withoutLock(_ error: any Error, login: Bool, keep: Session?? = nil) -> AttemptResult {
        let why = "the fleet's store is unavailable (\(error))"
        self.fleetRow.problem = why
        self.count("transient")
        let previous = keep ?? self.currentSession
        if login {
            let left = previous.map { .ready($0) } ?? self.fallback(reason: "login failed: \(why)")
            self.step { $0.settled(left, why: nil, now: self.clock.now) }
            return .failed("cannot log in: \(why); try again when it is back")
        }
        let delay = self.step {
            $0.backOff(
                .storeUnavailable,
                why: why,
                reason: why,
                keep: previous,
                platformFiles: .unchanged,
                now: self.clock.now,
                random: self.random
            )
        }
        self.logger.warning(
            "cannot take the fleet's refresh lock; keeping the current token and retrying",
            metadata: [
                "reason": "\(error)", "failures": "\(self.machine.retry.failures)",
                "retry_in_s": "\(String(format: "%.1f", delay))",
            ]
        )
        return .failed(why)
    }

    /// Holding the lock: adopt what another host did, or refresh from the row and write the answer.
    private func underLock(
        _ grant: Grant?,
        reason: RefreshReason,
        row: SharedSession,
        lease: any SharedSessionLease
    ) async -> AttemptResult {
        let now = self.clock.now
        self.refreshLockTaken()
        // The store answered: whatever was wrong with it is over (a reason found below stays).
        self.fleetRow.problem = nil
        var previous = self.currentSession
        // The version the row has now, as far as this host knows: the compare-and-set of each
        // write below.
        var expected = row.version
        if let mark = row.inFlight, mark.host != self.fleetHost,
            mark.mayStillBeInFlight(limit: self.policy.inFlightLimit.seconds)
        {
            // Another host marked a refresh in flight, and its request may not have ended yet:
            // holding the lock proves only that its lock is gone (a timeout of the server's, a
            // connection lost). A host not connected now may only be late to reconnect, after a
            // PostgreSQL restart or a failover, with the answer in hand. Its answer comes into
            // the row; sending the same refresh token before the in-flight limit would be the
            // reuse the lock exists to prevent. Meanwhile the row's token serves while it is
            // valid: a host that had not read the row yet takes it.
            var keep: Session?? = nil
            if row.version != self.fleetRow.version {
                self.take(row)
                keep = .some(self.restoredState().session)
            }
            return self.withoutLock(
                InFlightElsewhere(host: mark.host, seconds: Int(mark.age), connected: mark.hostConnected),
                login: grant?.isLogin == true,
                keep: keep
            )
        }
        if let mine = self.fleetRow.version, row.version < mine, previous != nil {
            // The row went back in time (a failover lost its last commits, or a backup was
            // restored): this host holds a newer answer of the token server than the row, and
            // the row's refresh token may already be spent. Its session goes back in first.
            self.logger.warning(
                "the fleet's row is older than the session this host adopted; writing this host's session back",
                metadata: ["row_version": "\(row.version)", "version_here": "\(mine)"]
            )
            await self.write(to: lease, floor: mine, expected: expected)
            if !self.fleetRow.behind, let written = self.fleetRow.version { expected = written }
        } else if row.version != self.fleetRow.version {
            let rejected = reason == .upstream401 ? self.machine.rejectedByUpstream : nil
            self.take(row)
            let restored = self.restoredState()
            // A refresh marked in flight by a host that is gone is not adopted: it is repeated now.
            let inFlight = (self.stored.user ?? self.stored.client)?.refreshSentAt != nil
            if grant == nil, !inFlight, case .ready(let session) = restored, session.access != nil,
                now < session.refreshAt, rejected == nil || session.access != rejected
            {
                self.adopted(row, state: restored)
                return .issued
            }
            previous = restored.session
            if row.version == 0, previous == nil, let seed = self.seed {
                previous = Session(seed: seed, now: now)
            }
        }
        let chosen: Grant
        if let grant {
            chosen = grant
        } else {
            switch self.machine.choose(for: previous, now: now) {
            case .refreshToken(let refreshToken):
                chosen = .refreshToken(refreshToken)
            case .clientGrant:
                chosen = .clientCredentials(adding: [])
            case .serveUntilExpiry(let session):
                self.step { $0.settled(.ready(session), why: nil, now: now) }
                return .issued
            case .loggedOut(let why):
                self.step { $0.settled(.loggedOut(reason: why), why: nil, now: now) }
                return .failed(why)
            }
        }
        if case .refreshToken = chosen, let previous {
            // In the row before the refresh token leaves: a host killed now tells the next one.
            var marked = previous.stored
            marked.refreshSentAt = now
            switch previous.kind {
            case .user: self.stored.user = marked
            case .client: self.stored.client = marked
            }
            do {
                try await self.writeMark(to: lease, expected: expected)
            } catch {
                return self.withoutLock(error, login: false)
            }
        }
        let before = self.stored
        let sent = ContinuousClock.now
        let outcome = await Self.askTokenEndpoint(
            chosen,
            source: self.source,
            transport: self.transport,
            clock: self.clock
        )
        self.refreshAnswered(after: ContinuousClock.now - sent, grant: self.name(of: chosen))
        let result: AttemptResult
        if self.verifier != nil,
            let why = await Self.verificationProblem(outcome, verifier: self.verifier, transport: self.transport)
        {
            result = self.unverified(outcome, why: why, grant: chosen, previous: previous, reason: reason)
        } else {
            result = self.apply(outcome, grant: chosen, previous: previous, reason: reason)
        }
        if self.stored != before {
            await self.write(to: lease, expected: expected)
        } else if case .refreshToken = chosen, previous != nil {
            await self.clearMark(on: lease, expected: expected)
        }
        return result
    }

    /// Writes the session with its in-flight mark as it is now (set before a refresh token
    /// leaves, cleared after a refresh that ended without an answer): under the lock, announced
    /// to no one, the row's version as `expected`.
    private func writeMark(to lease: any SharedSessionLease, expected: Int64) async throws {
        _ = try await lease.write(
            self.stored.shifted(by: self.clock.wallOffset),
            announce: false,
            floor: 0,
            expected: expected
        )
    }

    /// The refresh ended without an answer that changed the session (the token server was not
    /// reached, did not answer in time, or failed): it is no longer in flight, so its mark leaves
    /// the row and no other host waits for it. The refresh token is the one this host would send
    /// again after its backoff; whichever host tries first sends it, under the lock.
    private func clearMark(on lease: any SharedSessionLease, expected: Int64) async {
        self.stored.user?.refreshSentAt = nil
        self.stored.client?.refreshSentAt = nil
        do {
            try await self.writeMark(to: lease, expected: expected)
        } catch {
            self.logger.warning(
                "cannot clear this host's refresh-in-flight mark in the fleet's row; the other hosts wait for it until auth.request_timeout × 3 + 5 s have passed",
                metadata: ["error": "\(error)"]
            )
        }
    }

    /// Writes `stored` as a new version while holding the lock, if the row is still at
    /// `expected`, the version read under it.
    private func write(to lease: any SharedSessionLease, floor: Int64 = 0, expected: Int64) async {
        do {
            self.fleetRow.version = try await lease.write(
                self.stored.shifted(by: self.clock.wallOffset),
                announce: true,
                floor: floor,
                expected: expected
            )
            self.fleetRow.writtenBy = self.fleetHost
            self.fleetRow.behind = false
        } catch {
            self.fleetRow.behind = true
            self.logger.error(
                "cannot write the new tokens to the fleet's store; they serve here and bearerd retries the write",
                metadata: ["error": "\(error)", "retry_in_s": "\(Int(RefreshStateMachine.saveRetryInterval))"]
            )
        }
    }

    /// Writes a change made here (a logout, a device login) to the fleet's row.
    func publishShared() async {
        guard let fleet = self.fleet else { return }
        self.fleetRow.behind = true
        do {
            try await fleet.withRefreshLock { row, lease in await self.write(to: lease, expected: row.version) }
        } catch {
            self.logger.error(
                "cannot reach the fleet's store; the change is kept here and written when it is back",
                metadata: ["error": "\(error)"]
            )
        }
    }

    /// A write that failed is tried again, unless another host has written since: then its
    /// session wins, as the token server's newest answer.
    func catchUpShared() async {
        guard self.fleetRow.behind, let fleet = self.fleet else { return }
        // A refresh in flight reads and writes the row itself; adopting under it would end its state.
        if self.state.isRefreshing { return }
        try? await fleet.withRefreshLock { row, lease in await self.catchUp(row, lease: lease) }
    }

    private func catchUp(_ row: SharedSession, lease: any SharedSessionLease) async {
        guard self.fleetRow.behind else { return }
        if self.state.isRefreshing { return }
        if let mine = self.fleetRow.version, row.version <= mine {
            await self.write(to: lease, floor: mine, expected: row.version)
        } else {
            self.fleetRow.behind = false
            self.take(row)
            self.adopted(row, state: self.restoredState())
        }
    }

    /// A version another host wrote (a notification, or the poll). Ignored while a refresh is in
    /// flight here: that refresh reads the row under the lock.
    package func adoptShared(_ row: SharedSession) {
        guard self.fleet != nil else { return }
        self.fleetRow.problem = nil
        if self.state.isRefreshing { return }
        guard row.version > (self.fleetRow.version ?? -1) || (row.version == 0 && self.fleetRow.version == nil) else {
            return
        }
        self.fleetRow.behind = false
        self.take(row)
        self.adopted(row, state: self.restoredState())
    }

    /// The fleet's store cannot be reached (from the listener); shown by `status`.
    package func sharedStoreUnavailable(_ why: String) {
        self.fleetRow.problem = why
    }

    private func take(_ row: SharedSession) {
        // The row keeps wall-clock times, as every host reads them.
        var tokens = row.tokens?.shifted(by: -self.clock.wallOffset) ?? StoredTokens()
        if tokens.user?.isEmpty == true { tokens.user = nil }
        if tokens.client?.isEmpty == true || !self.source.hasClientGrant { tokens.client = nil }
        if let proofKey = self.proofKey {
            // The fleet's key, if one was written; else this host's goes in with the next write.
            tokens.dpopKey = Self.proofKey(proofKey, from: tokens, logger: self.logger)
        }
        self.stored = tokens
        self.fleetRow.version = row.version
        self.fleetRow.writtenBy = row.writtenBy
    }

    private func adopted(_ row: SharedSession, state: State) {
        Counter(label: "bearerd_fleet_adoptions_total", dimensions: self.sessionDimensions).increment()
        self.logger.info(
            "adopted the fleet's session",
            metadata: ["version": "\(row.version)", "written_by": "\(row.writtenBy ?? "-")"]
        )
        self.step { $0.replaced(with: state, now: self.clock.now) }
    }

    /// The state `stored` gives: the user's session, else the client's, else logged out.
    private func restoredState() -> State {
        let now = self.clock.now
        if let user = self.stored.user {
            return .ready(Session(restoring: user, kind: .user, now: now, policy: self.policy))
        }
        if let client = self.stored.client {
            return .ready(Session(restoring: client, kind: .client, now: now, policy: self.policy))
        }
        return .loggedOut(reason: "no token: run `bearerd login`")
    }
}

/// Where a host stands with the fleet's row.
struct FleetPosition: Sendable {
    /// The row version the session in hand came from.
    var version: Int64?
    var writtenBy: String?
    /// Whether tokens issued here are not in the fleet's row yet (a write failed).
    var behind = false
    /// Why the fleet's store cannot be used right now, for `status`.
    var problem: String?
}

/// Why this host did not refresh: another host's refresh may still be in flight.
struct InFlightElsewhere: Error, CustomStringConvertible {
    let host: String
    let seconds: Int
    let connected: Bool

    var description: String {
        let state = self.connected ? "is still connected" : "is not connected now (it may reconnect with the answer)"
        return
            "host \(self.host) sent the refresh token \(self.seconds)s ago and \(state); its answer comes through the fleet's row, or the refresh is repeated once auth.request_timeout × 3 + 5 s has passed"
    }
}
