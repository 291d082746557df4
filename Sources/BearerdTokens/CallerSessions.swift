import BearerdAuth
import Foundation
import Logging
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// The token sets of a `per_caller` session: one ``TokenManager`` per caller uid, each on a store
/// of its own, made when that uid first needs it (a request, a login, a `status`) and unloaded
/// when it has been idle for `callers.idle_unload` or when more than `callers.max_loaded` are in
/// memory (the least recently used first). An unloaded user's tokens stay in their store and come
/// back on their next request.
///
/// A uid has at most one manager at a time, so its refreshes are single-flight as any session's:
/// a load waits for an unload of the same uid to have closed its store, and loads of one uid at
/// once share one task.
package final class CallerSessions: RefreshTiming {
    /// Makes the manager of `uid` from its store. `create`: make the store when there is none (a
    /// login); otherwise `nil` when the uid has none (it never logged in, or logged out and the
    /// file is gone). Throws a store problem for a person (a damaged file is moved aside by the
    /// store itself).
    package typealias Factory =
        @Sendable (_ uid: UInt32, _ create: Bool, _ policy: RefreshPolicy) throws
        -> TokenManager?

    package struct Limits: Sendable, Equatable {
        /// At most this many users' managers in memory (`callers.max_loaded`).
        package var maxLoaded: Int
        /// A manager unused this long is unloaded (`callers.idle_unload`).
        package var idleUnload: Duration

        package init(maxLoaded: Int = 1000, idleUnload: Duration = .seconds(900)) {
            self.maxLoaded = max(1, maxLoaded)
            self.idleUnload = idleUnload
        }
    }

    /// One loaded user: their manager, when it was last used, and its refresh timer.
    final class Entry: Sendable {
        let uid: UInt32
        let manager: TokenManager
        /// Nanoseconds on the monotonic clock of the last use.
        let lastUse: Atomic<Int64>
        /// Set once it is being unloaded: whoever holds it asks the registry again.
        let unloaded = Atomic<Bool>(false)
        let timer = Mutex<Task<Void, Never>?>(nil)
        /// Admin calls under way for this user (a login, a device login polling): not unloaded
        /// meanwhile, or what they install would go to a closed store.
        let pins = Atomic<Int>(0)
        /// Not unloaded before this (monotonic nanoseconds): a browser login begun waits for its
        /// code this long.
        let keepUntil = Atomic<Int64>(0)

        init(uid: UInt32, manager: TokenManager, now: Int64) {
            self.uid = uid
            self.manager = manager
            self.lastUse = Atomic(now)
        }

        var isLoaded: Bool { !self.unloaded.load(ordering: .acquiring) }

        func isHeld(now: Int64) -> Bool {
            self.pins.load(ordering: .acquiring) > 0 || self.keepUntil.load(ordering: .relaxed) > now
        }
    }

    private struct State {
        var loaded: [UInt32: Entry] = [:]
        var loading: [UInt32: Task<Entry?, any Error>] = [:]
        /// Each uid's last unload (its number, to tell it from a later one), which a load of that
        /// uid waits for: the store's lock goes when it ends.
        var unloading: [UInt32: (number: Int, task: Task<Void, Never>)] = [:]
        var unloads = 0
        var closed = false
    }

    /// The session's name, for what a caller without tokens is told (`nil`: the only session).
    package let session: String?
    let limits: Limits
    private let factory: Factory
    private let state = Mutex(State())
    /// The timing rules in force (a reload changes them), for the users loaded from now on.
    private let policy: Mutex<RefreshPolicy>
    private let logger: Logger
    /// Nanoseconds on a monotonic clock (the boot clock in the daemon).
    let now: @Sendable () -> Int64
    /// The uids that have a store, for root's listing.
    private let storedUIDs: @Sendable () -> [UInt32]

    package init(
        session: String?,
        limits: Limits,
        policy: RefreshPolicy,
        logger: Logger,
        now: @escaping @Sendable () -> Int64 = CallerSessions.bootNanoseconds,
        storedUIDs: @escaping @Sendable () -> [UInt32] = { [] },
        factory: @escaping Factory
    ) {
        self.session = session
        self.limits = limits
        self.policy = Mutex(policy)
        self.logger = logger
        self.now = now
        self.storedUIDs = storedUIDs
        self.factory = factory
    }

    /// What a caller who has not logged in is told to run.
    package var loginHint: String {
        "run `bearerd login\(self.session.map { " --session \($0)" } ?? "")` as yourself"
    }

    /// The loaded manager of `uid`, without waiting; marks it used. Must not block: the data path
    /// asks it for each request whose connection has no live entry at hand.
    func loaded(_ uid: UInt32) -> Entry? {
        guard let entry = self.state.withLock({ $0.loaded[uid] }) else { return nil }
        entry.lastUse.store(self.now(), ordering: .relaxed)
        return entry
    }

    /// The manager of `uid`, loaded from its store if need be; `create`: a login, which makes the
    /// store. `nil`: the uid has no tokens here.
    package func manager(for uid: UInt32, create: Bool = false) async throws -> TokenManager? {
        try await self.entry(for: uid, create: create)?.manager
    }

    func entry(for uid: UInt32, create: Bool) async throws -> Entry? {
        // Twice at most: a load that found no store, which a login (`create`) then makes.
        for _ in 0..<3 {
            enum Step {
                case found(Entry)
                case wait(Task<Entry?, any Error>, ours: Bool)
                case closed
            }
            let step = self.state.withLock { state -> Step in
                guard !state.closed else { return .closed }
                if let entry = state.loaded[uid] { return .found(entry) }
                if let task = state.loading[uid] { return .wait(task, ours: false) }
                let unloading = state.unloading[uid]?.task
                let task = Task { () throws -> Entry? in
                    // Its store's lock goes with the unload: wait for it before opening the file.
                    await unloading?.value
                    return try self.load(uid, create: create)
                }
                state.loading[uid] = task
                return .wait(task, ours: true)
            }
            switch step {
            case .closed:
                throw TokenUnavailableError.tokenServerUnavailable(
                    "this session is stopping (bearerd is stopping, or a reload removed it): send the request again",
                    retryAfterSeconds: 1
                )
            case .found(let entry):
                entry.lastUse.store(self.now(), ordering: .relaxed)
                return entry
            case .wait(let task, let ours):
                let entry: Entry?
                do {
                    entry = try await task.value
                } catch {
                    if ours { self.state.withLock { _ = $0.loading.removeValue(forKey: uid) } }
                    throw error
                }
                if ours { self.state.withLock { _ = $0.loading.removeValue(forKey: uid) } }
                if let entry { return entry }
                // Another's load that did not create the store: a login makes it now.
                if !create || ours { return nil }
            }
        }
        return nil
    }

    /// Opens `uid`'s store and starts its refresh timer; unloads the least recently used users
    /// beyond `callers.max_loaded`.
    private func load(_ uid: UInt32, create: Bool) throws -> Entry? {
        guard let manager = try self.factory(uid, create, self.policy.withLock { $0 }) else { return nil }
        let entry = Entry(uid: uid, manager: manager, now: self.now())
        let now = entry.lastUse.load(ordering: .relaxed)
        let (evicted, closed) = self.state.withLock { state -> ([Entry], Bool) in
            guard !state.closed else {
                // Made while the session stopped: its store closes, and `close()` waits for it.
                state.unloads += 1
                state.unloading[uid] = (state.unloads, Task { await manager.closeStore() })
                return ([], true)
            }
            state.loaded[uid] = entry
            // Under the lock, so that an unload never misses the timer it must stop.
            entry.timer.withLock { $0 = Task { await manager.runScheduler() } }
            let over = state.loaded.count - self.limits.maxLoaded
            guard over > 0 else { return ([], false) }
            // Users in the middle of a login stay; the limit is exceeded while they are.
            let oldest = state.loaded.values.filter { $0.uid != uid && !$0.isHeld(now: now) }
                .sorted { $0.lastUse.load(ordering: .relaxed) < $1.lastUse.load(ordering: .relaxed) }
                .prefix(over)
            return (oldest.map { self.unload($0, in: &state) }, false)
        }
        if closed {
            throw TokenUnavailableError.tokenServerUnavailable(
                "this session is stopping: send the request again",
                retryAfterSeconds: 1
            )
        }
        if !evicted.isEmpty {
            self.logger.debug(
                "unloaded the least recently used callers' sessions (callers.max_loaded)",
                metadata: ["count": "\(evicted.count)"]
            )
        }
        return entry
    }

    /// Takes `entry` out of the loaded ones; its timer stops and its store closes in a task that a
    /// load of the same uid waits for.
    private func unload(_ entry: Entry, in state: inout State) -> Entry {
        entry.unloaded.store(true, ordering: .releasing)
        state.loaded[entry.uid] = nil
        let previous = state.unloading[entry.uid]?.task
        state.unloads += 1
        let number = state.unloads
        let task = Task {
            await previous?.value
            entry.timer.withLock { $0?.cancel() }
            await entry.manager.closeStore()
            self.state.withLock { state in
                // Unless a later unload of this uid took the slot meanwhile: a load waits for that one.
                if state.unloading[entry.uid]?.number == number { state.unloading[entry.uid] = nil }
            }
        }
        state.unloading[entry.uid] = (number, task)
        return entry
    }

    /// Unloads every user idle for `callers.idle_unload` or longer; returns how many.
    @discardableResult
    package func sweep() async -> Int {
        let now = self.now()
        let idle = self.limits.idleUnload
        let limit = idle.components.seconds * 1_000_000_000 + idle.components.attoseconds / 1_000_000_000
        let tasks = self.state.withLock { state -> [Task<Void, Never>] in
            let stale = state.loaded.values.filter {
                now - $0.lastUse.load(ordering: .relaxed) >= limit && !$0.isHeld(now: now)
            }
            return stale.compactMap { entry in
                _ = self.unload(entry, in: &state)
                return state.unloading[entry.uid]?.task
            }
        }
        for task in tasks { await task.value }
        return tasks.count
    }

    /// Runs until cancelled: unloads idle users every `callers.idle_unload / 4` (at least a second).
    package func runSweeper() async {
        let period = max(.seconds(1), self.limits.idleUnload / 4)
        while !Task.isCancelled {
            try? await Task.sleep(for: period)
            if Task.isCancelled { return }
            await self.sweep()
        }
    }

    /// How many users are in memory now.
    package var loadedCount: Int { self.state.withLock { $0.loaded.count } }

    /// The uids with tokens here: those in memory and those with a store.
    package var uids: [UInt32] {
        let loaded = self.state.withLock { Array($0.loaded.keys) }
        return Array(Set(loaded + self.storedUIDs())).sorted()
    }

    /// The status of `uid` when they are in memory, without loading them or marking them used.
    package func loadedStatus(_ uid: UInt32) async -> TokenStatus? {
        guard let entry = self.state.withLock({ $0.loaded[uid] }) else { return nil }
        return await entry.manager.status()
    }

    /// Logs `uid` out (their tokens only); `nil` when they have none here.
    package func logOut(_ uid: UInt32) async -> LogoutResult? {
        guard let manager = try? await self.manager(for: uid) else { return nil }
        return await manager.logOut()
    }

    /// The session stops: nothing loads any more, every user's timer stops and every store is
    /// written and closed.
    package func close() async {
        let loading = self.state.withLock { state in
            state.closed = true
            return Array(state.loading.values)
        }
        // A load under way finishes first: it closes what it opened, under `unloading`.
        for task in loading { _ = try? await task.value }
        let tasks = self.state.withLock { state -> [Task<Void, Never>] in
            for entry in Array(state.loaded.values) { _ = self.unload(entry, in: &state) }
            return state.unloading.values.map(\.task)
        }
        for task in tasks { await task.value }
    }

    /// Runs `body` with `uid`'s manager (loaded, or made when `create`) held in memory: an admin
    /// call that may install tokens (a login) is not cut off by an unload. `keep`: hold it that
    /// long after too (a browser login waiting for its code).
    package func withManager<Result: Sendable>(
        for uid: UInt32,
        create: Bool,
        keep: Duration? = nil,
        _ body: (TokenManager?) async throws -> Result
    ) async throws -> Result {
        var held: Entry?
        for _ in 0..<3 where held == nil {
            guard let entry = try await self.entry(for: uid, create: create) else { return try await body(nil) }
            // Pinned under the lock an unload decides under: it is either still loaded and held
            // now, or gone (unloaded between finding it and holding it) and loaded again.
            let pinned = self.state.withLock { state -> Bool in
                guard state.loaded[uid] === entry else { return false }
                entry.pins.add(1, ordering: .acquiringAndReleasing)
                return true
            }
            if pinned { held = entry }
        }
        guard let entry = held else {
            throw TokenUnavailableError.tokenServerUnavailable(
                "cannot load this user's session now: try again",
                retryAfterSeconds: 1
            )
        }
        defer {
            if let keep {
                let (seconds, attoseconds) = keep.components
                entry.keepUntil.store(
                    self.now() + seconds * 1_000_000_000 + attoseconds / 1_000_000_000,
                    ordering: .relaxed
                )
            }
            entry.pins.subtract(1, ordering: .acquiringAndReleasing)
        }
        return try await body(entry.manager)
    }

    /// Waits for the refreshes in flight of every loaded user.
    package func settle() async {
        let entries = self.state.withLock { Array($0.loaded.values) }
        for entry in entries { await entry.manager.settle() }
    }

    /// New timing rules (a reload), for every loaded user and those loaded later.
    package func update(policy: RefreshPolicy) async {
        self.policy.withLock { $0 = policy }
        let entries = self.state.withLock { Array($0.loaded.values) }
        for entry in entries { await entry.manager.update(policy: policy) }
    }

    /// Nanoseconds since boot (`CLOCK_BOOTTIME`): idle time counts across a suspend.
    package static let bootNanoseconds: @Sendable () -> Int64 = {
        var spec = timespec()
        clock_gettime(CLOCK_BOOTTIME, &spec)
        return Int64(spec.tv_sec) * 1_000_000_000 + Int64(spec.tv_nsec)
    }
}

/// What a reload gives new timing rules (`auth.*` margins and limits): a session's manager, or
/// every user's of a `per_caller` session.
package protocol RefreshTiming: Sendable {
    func update(policy: RefreshPolicy) async
}

extension TokenManager: RefreshTiming {}
