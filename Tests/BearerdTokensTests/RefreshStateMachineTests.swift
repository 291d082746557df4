import BearerdAuth
import Foundation
import Testing

@testable import BearerdTokens

/// The engine's rules without the actor: each row starts the machine in a state, feeds it events
/// at times on the engine's clock, and compares the state and the last event's action. No
/// sleeps, no logs, no transport.
@Suite("Refresh state machine: (state, event, now) → (state, action)")
struct RefreshStateMachineTests {
    typealias Machine = RefreshStateMachine
    typealias State = RefreshStateMachine.State

    static let t0 = Date(timeIntervalSince1970: 1_800_000_000)
    static func at(_ seconds: TimeInterval) -> Date { t0.addingTimeInterval(seconds) }

    /// A token received at `received`, for an hour: usable until 30 s before its end, refreshed
    /// 60 s before.
    static func session(
        _ access: String? = "a",
        received: TimeInterval = 0,
        refreshToken: String? = "r",
        kind: TokenSession.Kind = .user,
        wallAnchored: Bool = false
    ) -> TokenSession {
        var session = TokenSession(
            kind: kind,
            access: access.map { BearerToken($0) },
            expiresAt: at(received + 3600),
            usableUntil: at(received + 3570),
            refreshAt: at(received + 3540),
            refreshToken: refreshToken.map { Secret($0) },
            receivedAt: at(received)
        )
        session.wallAnchored = wallAnchored
        return session
    }

    enum Event: Sendable {
        case tokenAsked(expiredIssues: Int = 0)
        case timerFired(inputs: Int? = nil)
        case upstreamRejected(String, path: String = "/api/x")
        case freshTokenAnswered(path: String, refused: Bool)
        case attemptAsked(login: Bool = false, inputs: Int? = nil)
        case issued(TokenSession)
        case backOff(RetrySchedule.Failure, keep: TokenSession?, files: Machine.PlatformFiles = .notAtFault)
        case replaced(State)
        case clocks(monotonic: Double, boot: Double, wall: Double)
    }

    enum Action: Equatable, Sendable {
        case token(Machine.TokenAction)
        case attempt(RefreshReason?)
        case reject(Machine.RejectAction)
        case paused(Bool)
        case admission(Machine.Admission)
        case delay(TimeInterval)
        case jumps([ClockJump])
        case none
    }

    static func apply(_ event: Event, at now: Date, to machine: inout Machine) -> Action {
        switch event {
        case .tokenAsked(let expired): .token(machine.tokenAsked(now: now, expiredIssues: expired))
        case .timerFired(let inputs): .attempt(machine.timerFired(now: now, platformInputs: inputs))
        case .upstreamRejected(let token, let path):
            .reject(machine.upstreamRejected(BearerToken(token), path: path, now: now))
        case .freshTokenAnswered(let path, let refused):
            .paused(
                machine.freshTokenAnswered(
                    machine.state.session?.access ?? BearerToken("none"),
                    path: path,
                    refused: refused,
                    now: now
                )
            )
        case .attemptAsked(let login, let inputs):
            .admission(machine.attemptAsked(login: login, now: now, platformInputs: inputs))
        case .issued(let session):
            {
                machine.issued(session, now: now)
                return .none
            }()
        case .backOff(let failure, let keep, let files):
            .delay(
                machine.backOff(
                    failure,
                    why: "down",
                    reason: "down",
                    keep: keep,
                    platformFiles: files,
                    now: now,
                    random: { 1 }
                )
            )
        case .replaced(let state):
            {
                machine.replaced(with: state, now: now)
                return .none
            }()
        case .clocks(let monotonic, let boot, let wall):
            .jumps(machine.clocksRead(ClockReading(monotonic: monotonic, boot: boot, wall: wall), now: now))
        }
    }

    struct Row: CustomTestStringConvertible, Sendable {
        let name: String
        let start: State
        let steps: [(Event, TimeInterval)]
        let state: State
        let action: Action
        var policy = RefreshPolicy()
        var clientGrant: ClientGrant?
        var testDescription: String { self.name }
    }

    static let slowBackoff: RefreshPolicy = {
        var policy = RefreshPolicy()
        policy.backoffBase = .seconds(60)
        return policy
    }()

    static let twoPerMinute: RefreshPolicy = {
        var policy = RefreshPolicy()
        policy.maxRefreshesPerMinute = 2
        return policy
    }()

    static let rows: [Row] = [
        // A request asks for a token.
        Row(
            name: "ready: the token in hand",
            start: .ready(session()),
            steps: [(.tokenAsked(), 10)],
            state: .ready(session()),
            action: .token(.use(BearerToken("a")))
        ),
        Row(
            name: "ready past its usable end: a refresh",
            start: .ready(session()),
            steps: [(.tokenAsked(), 3571)],
            state: .ready(session()),
            action: .token(.refresh(.expired))
        ),
        Row(
            name: "a server that issues expired tokens: 503 after three",
            start: .ready(session()),
            steps: [(.tokenAsked(expiredIssues: 3), 3571)],
            state: .ready(session()),
            action: .token(
                .fail(
                    .tokenServerUnavailable(
                        "no valid token after 3 refreshes: the token server issues tokens that are already expired; bearerd retries in 1s by itself",
                        retryAfterSeconds: 1
                    )
                )
            )
        ),
        Row(
            name: "refreshing: join the one in flight",
            start: .refreshing(session()),
            steps: [(.tokenAsked(), 3571)],
            state: .refreshing(session()),
            action: .token(.join)
        ),
        Row(
            name: "waiting: the token serves until it really expires",
            start: .waiting(session(), retryAt: at(3700), reason: "down"),
            steps: [(.tokenAsked(), 3590)],
            state: .waiting(session(), retryAt: at(3700), reason: "down"),
            action: .token(.use(BearerToken("a")))
        ),
        Row(
            name: "logged out without a client grant: not logged in",
            start: .loggedOut(reason: "run login"),
            steps: [(.tokenAsked(), 0)],
            state: .loggedOut(reason: "run login"),
            action: .token(.fail(.notLoggedIn("run login")))
        ),
        Row(
            name: "logged out with a client grant: the client token",
            start: .loggedOut(reason: "none"),
            steps: [(.tokenAsked(), 0)],
            state: .loggedOut(reason: "none"),
            action: .token(.refresh(.clientToken)),
            clientGrant: .clientCredentials
        ),

        // Proactive refresh.
        Row(
            name: "timer before refreshAt: nothing",
            start: .ready(session()),
            steps: [(.timerFired(), 3539)],
            state: .ready(session()),
            action: .attempt(nil)
        ),
        Row(
            name: "timer at refreshAt: proactive",
            start: .ready(session()),
            steps: [(.timerFired(), 3540)],
            state: .ready(session()),
            action: .attempt(.proactive)
        ),
        Row(
            name: "proactive refresh: one attempt, then the new session",
            start: .ready(session()),
            steps: [(.timerFired(), 3540), (.attemptAsked(), 3540), (.issued(session("b", received: 3541)), 3541)],
            state: .ready(session("b", received: 3541)),
            action: .none
        ),

        // Outage: backoff, and the probe for waiting callers.
        Row(
            name: "an outage keeps the token and waits out the backoff",
            start: .ready(session()),
            steps: [
                (.attemptAsked(), 3540), (.backOff(.outage(answered: true, retryAfter: nil), keep: session()), 3541),
            ],
            state: .waiting(session(), retryAt: at(3601), reason: "down"),
            action: .delay(60),
            policy: slowBackoff
        ),
        Row(
            name: "a caller without a token probes 3 s after the last attempt, not after the backoff",
            start: .ready(session()),
            steps: [
                (.attemptAsked(), 3540), (.backOff(.outage(answered: true, retryAfter: nil), keep: nil), 3541),
                (.tokenAsked(), 3545),
            ],
            state: .waiting(nil, retryAt: at(3545), reason: "down"),
            action: .token(.refresh(.retry)),
            policy: slowBackoff
        ),
        Row(
            name: "the probe waits for its interval: 503 with the time to come back",
            start: .ready(session(refreshToken: "r")),
            steps: [
                (.attemptAsked(), 3598), (.backOff(.outage(answered: true, retryAfter: nil), keep: session()), 3599),
                (.tokenAsked(), 3600.5),
            ],
            state: .waiting(session(), retryAt: at(3602), reason: "down"),
            action: .token(
                .fail(.tokenServerUnavailable("down; bearerd retries in 2s by itself", retryAfterSeconds: 2))
            ),
            policy: slowBackoff
        ),
        Row(
            name: "the server's Retry-After holds callers back too",
            start: .ready(session()),
            steps: [
                (.attemptAsked(), 3598),
                (.backOff(.outage(answered: true, retryAfter: .seconds(120)), keep: session()), 3599),
                (.tokenAsked(), 3610),
            ],
            state: .waiting(session(), retryAt: at(3719), reason: "down"),
            action: .token(
                .fail(.tokenServerUnavailable("down; bearerd retries in 109s by itself", retryAfterSeconds: 109))
            )
        ),
        Row(
            name: "beyond auth.max_refreshes_per_minute an attempt waits for the minute",
            start: .ready(session()),
            steps: [
                (.attemptAsked(), 0), (.issued(session()), 1), (.attemptAsked(), 2), (.issued(session()), 3),
                (.attemptAsked(), 4),
            ],
            state: .waiting(session(), retryAt: at(60), reason: RetrySchedule.rateLimited(2)),
            action: .admission(.heldBack(RetrySchedule.rateLimited(2))),
            policy: twoPerMinute
        ),
        Row(
            name: "a login is never held back",
            start: .ready(session()),
            steps: [
                (.attemptAsked(), 0), (.issued(session()), 1), (.attemptAsked(), 2), (.issued(session()), 3),
                (.attemptAsked(login: true), 4),
            ],
            state: .refreshing(session()),
            action: .admission(.send),
            policy: twoPerMinute
        ),

        // Wake.
        Row(
            name: "a wake moves a waiting retry to now",
            start: .waiting(nil, retryAt: at(300), reason: "down"),
            steps: [
                (.clocks(monotonic: 0, boot: 0, wall: 0), 0), (.clocks(monotonic: 1, boot: 7201, wall: 7201), 100),
            ],
            state: .waiting(nil, retryAt: at(100), reason: "down"),
            action: .jumps([.suspended(seconds: 7200)])
        ),
        Row(
            name: "no answer just after a wake: retried in 1 s",
            start: .ready(session()),
            steps: [
                (.clocks(monotonic: 0, boot: 0, wall: 0), 0), (.clocks(monotonic: 1, boot: 7201, wall: 7201), 7200),
                (.attemptAsked(), 7200), (.backOff(.outage(answered: false, retryAfter: nil), keep: session()), 7200.2),
            ],
            state: .waiting(session(), retryAt: at(7201.2), reason: "down"),
            action: .delay(1),
            policy: slowBackoff
        ),
        Row(
            name: "a request just after a wake waits for the next try instead of a 503",
            start: .ready(session()),
            steps: [
                (.clocks(monotonic: 0, boot: 0, wall: 0), 0), (.clocks(monotonic: 1, boot: 7201, wall: 7201), 7200),
                (.attemptAsked(), 7200), (.backOff(.outage(answered: false, retryAfter: nil), keep: session()), 7200.2),
                (.tokenAsked(), 7200.5),
            ],
            state: .waiting(session(), retryAt: at(7201.2), reason: "down"),
            action: .token(.sleep(until: at(7201.2)))
        ),
        Row(
            name: "a step forward brings a wall-clock expiry earlier",
            start: .ready(session(wallAnchored: true)),
            steps: [(.clocks(monotonic: 0, boot: 0, wall: 0), 0), (.clocks(monotonic: 10, boot: 10, wall: 610), 10)],
            state: .ready(session(wallAnchored: true).movedEarlier(by: 600)),
            action: .jumps([.wallStepped(seconds: 600)])
        ),
        Row(
            name: "a step back moves nothing",
            start: .ready(session(wallAnchored: true)),
            steps: [(.clocks(monotonic: 0, boot: 0, wall: 0), 0), (.clocks(monotonic: 10, boot: 10, wall: -3590), 10)],
            state: .ready(session(wallAnchored: true)),
            action: .jumps([.wallStepped(seconds: -3600)])
        ),

        // 401s from the upstream.
        Row(
            name: "a 401 to the current token: one refresh",
            start: .ready(session()),
            steps: [(.upstreamRejected("a"), 100)],
            state: .ready(session()),
            action: .reject(.refresh)
        ),
        Row(
            name: "a 401 to a replaced token: retry with the current one",
            start: .ready(session("b")),
            steps: [(.upstreamRejected("a"), 100)],
            state: .ready(session("b")),
            action: .reject(.useCurrent)
        ),
        Row(
            name: "a 401 to a token issued moments ago is passed on",
            start: .ready(session(received: 100)),
            steps: [(.upstreamRejected("a"), 105)],
            state: .ready(session(received: 100)),
            action: .reject(.passOnFresh)
        ),
        Row(
            name: "a 401 while refreshing joins it",
            start: .refreshing(session()),
            steps: [(.upstreamRejected("a"), 100)],
            state: .refreshing(session()),
            action: .reject(.join)
        ),
        Row(
            name: "a path refused twice with fresh tokens pauses its forced refreshes",
            start: .ready(session()),
            steps: [
                (.freshTokenAnswered(path: "/api/a", refused: true), 100),
                (.freshTokenAnswered(path: "/api/b", refused: true), 200),
                (.upstreamRejected("a", path: "/api/c"), 300),
            ],
            state: .ready(session()),
            action: .reject(.passOn)
        ),
        Row(
            name: "another path still forces a refresh at its first 401",
            start: .ready(session()),
            steps: [
                (.freshTokenAnswered(path: "/api/a", refused: true), 100),
                (.freshTokenAnswered(path: "/api/b", refused: true), 200),
                (.upstreamRejected("a", path: "/other"), 300),
            ],
            state: .ready(session()),
            action: .reject(.refresh)
        ),
        Row(
            name: "the pause ends",
            start: .ready(session()),
            steps: [
                (.freshTokenAnswered(path: "/api/a", refused: true), 100),
                (.freshTokenAnswered(path: "/api/b", refused: true), 200),
                (.upstreamRejected("a", path: "/api/c"), 501),
            ],
            state: .ready(session()),
            action: .reject(.refresh)
        ),
        Row(
            name: "a 401 does not hurry a try a refusal held back",
            start: .ready(session()),
            steps: [
                (.attemptAsked(), 100), (.backOff(.refusal, keep: session()), 101), (.upstreamRejected("a"), 101.5),
            ],
            state: .waiting(session(), retryAt: at(102), reason: "down"),
            action: .reject(.passOn)
        ),

        // Fleet adoption and token exchange.
        Row(
            name: "adopting the fleet's row ends the failures",
            start: .ready(session()),
            steps: [
                (.attemptAsked(), 100), (.backOff(.storeUnavailable, keep: session()), 101),
                (.replaced(.ready(session("b", received: 102))), 102), (.attemptAsked(), 103),
                (.backOff(.storeUnavailable, keep: session("b", received: 102)), 104),
            ],
            state: .waiting(session("b", received: 102), retryAt: at(105), reason: "down"),
            action: .delay(1)
        ),
        Row(
            name: "a refused subject token keeps the exchanged token and waits for a renewed file",
            start: .ready(session(refreshToken: nil, kind: .client)),
            steps: [
                (.attemptAsked(inputs: 7), 3540),
                (.backOff(.refusal, keep: session(refreshToken: nil, kind: .client), files: .stale), 3541),
                (.timerFired(inputs: 7), 3541.5),
            ],
            state: .waiting(session(refreshToken: nil, kind: .client), retryAt: at(3542), reason: "down"),
            action: .attempt(nil),
            clientGrant: .tokenExchange
        ),
        Row(
            name: "a fleet store outage while a refused exchange waits does not forget the platform's files",
            start: .ready(session(refreshToken: nil, kind: .client)),
            steps: [
                (.attemptAsked(inputs: 7), 3540),
                (.backOff(.refusal, keep: session(refreshToken: nil, kind: .client), files: .stale), 3541),
                (.attemptAsked(inputs: 7), 3542),
                (.backOff(.storeUnavailable, keep: session(refreshToken: nil, kind: .client), files: .unchanged), 3543),
                (.timerFired(inputs: 8), 3543.5),
            ],
            state: .waiting(session(refreshToken: nil, kind: .client), retryAt: at(3545), reason: "down"),
            action: .attempt(.platformTokenRenewed),
            clientGrant: .tokenExchange
        ),
        Row(
            name: "a renewed platform token is exchanged at once",
            start: .ready(session(refreshToken: nil, kind: .client)),
            steps: [
                (.attemptAsked(inputs: 7), 3540),
                (.backOff(.refusal, keep: session(refreshToken: nil, kind: .client), files: .stale), 3541),
                (.timerFired(inputs: 8), 3541.5),
            ],
            state: .waiting(session(refreshToken: nil, kind: .client), retryAt: at(3542), reason: "down"),
            action: .attempt(.platformTokenRenewed),
            clientGrant: .tokenExchange
        ),
    ]

    @Test(arguments: rows)
    func row(_ row: Row) {
        var machine = Machine(state: row.start, policy: row.policy, clientGrant: row.clientGrant)
        var action = Action.none
        for (event, seconds) in row.steps {
            action = Self.apply(event, at: Self.at(seconds), to: &machine)
        }
        #expect(machine.state == row.state)
        #expect(action == row.action)
    }

    @Test func theTimerLooksAtTheRightTime() {
        var machine = Machine(state: .ready(Self.session()), policy: RefreshPolicy(), clientGrant: nil)
        #expect(machine.nextWake(now: Self.at(0), saveBehind: false) == Self.at(3540))
        #expect(machine.nextWake(now: Self.at(0), saveBehind: true) == Self.at(5), "a failed write is tried again")
        _ = machine.attemptAsked(login: false, now: Self.at(3540), platformInputs: 1)
        #expect(machine.nextWake(now: Self.at(3540), saveBehind: false) == nil, "in flight: only a change wakes it")
        _ = machine.backOff(
            .refusal,
            why: "no",
            reason: "no",
            keep: nil,
            platformFiles: .stale,
            now: Self.at(3541),
            random: { 1 }
        )
        #expect(machine.watchesPlatformInputs)
        #expect(machine.nextWake(now: Self.at(3541), saveBehind: false) == Self.at(3542))
        #expect(
            Machine(state: .loggedOut(reason: ""), policy: RefreshPolicy(), clientGrant: .clientCredentials)
                .nextWake(now: Self.at(9), saveBehind: false) == Self.at(9)
        )
    }

    @Test func whatTheDataPathSeesFollowsTheState() {
        var machine = Machine(state: .ready(Self.session()), policy: Self.slowBackoff, clientGrant: nil)
        #expect(machine.usable?.until == Self.at(3570))
        #expect(machine.nextAttempt(now: Self.at(1)) == nil)
        _ = machine.attemptAsked(login: false, now: Self.at(3540), platformInputs: nil)
        #expect(machine.usable?.until == Self.at(3570))
        #expect(machine.nextAttempt(now: Self.at(3540)) == Self.at(3540))
        let generation = machine.generation
        _ = machine.backOff(
            .outage(answered: true, retryAfter: nil),
            why: "x",
            reason: "x",
            keep: Self.session(),
            now: Self.at(3541),
            random: { 1 }
        )
        #expect(machine.generation != generation, "every change is published")
        #expect(machine.usable?.until == Self.at(3600), "during an outage the token serves to its real end")
        #expect(machine.nextAttempt(now: Self.at(3541)) == Self.at(3601))
    }
}
