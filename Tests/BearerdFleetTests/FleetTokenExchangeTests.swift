import BearerdAuth
import BearerdConfig
import BearerdFleet
import BearerdTestSupport
import BearerdTokens
import Foundation
import Testing

/// A token exchanged from the platform's token (RFC 8693) is the fleet's like any client token:
/// one host exchanges, under the lock, and the others adopt it from the row.
@Suite(
    "Token exchange across hosts through PostgreSQL",
    .enabled(if: ProcessInfo.processInfo.environment["BEARERD_SKIP_E2E"] == nil),
    .timeLimit(.minutes(2))
)
struct FleetTokenExchangeTests {
    @Test func hostsRacingForTheFirstTokenExchangeOnceAndShareIt() async throws {
        let directory = try TemporaryDirectory()
        let subject = try directory.write("platform-token-of-this-workload\n", to: "subject")
        var settings = OAuth2Source.Settings(
            endpoint: .tokenURL("https://auth.example/token"),
            clientID: "workload",
            clientAuthentication: .none
        )
        settings.client.tokenExchange = .init(subjectTokenFile: subject, audiences: ["api://hello"])
        try await FleetLockTests.withFleet(hosts: 3, directory: directory, source: OAuth2Source(settings: settings)) {
            _,
            index in
            try await Task.sleep(for: .milliseconds(200))
            return FakeTokenEndpoint.json(
                #"{"access_token":"exchanged-\#(index)","token_type":"Bearer","expires_in":3600,"#
                    + #""issued_token_type":"urn:ietf:params:oauth:token-type:access_token"}"#
            )
        } _: { database, fleet, endpoint, _ in
            let tokens = try await withThrowingTaskGroup(of: String.self) { group in
                for host in fleet {
                    for _ in 0..<3 {
                        group.addTask { try await host.manager.token().value }
                    }
                }
                return try await group.reduce(into: Set<String>()) { $0.insert($1) }
            }
            #expect(tokens == ["exchanged-0"])
            #expect(endpoint.requests.count == 1)
            let form = try #require(endpoint.requests.first.map(FakeTokenEndpoint.form))
            #expect(form["grant_type"] == "urn:ietf:params:oauth:grant-type:token-exchange")
            #expect(form["subject_token"] == "platform-token-of-this-workload")
            #expect(try await database.sql("SELECT count(*) FROM bearerd_sessions") == "1")
            let status = await fleet[2].manager.status()
            #expect(status.session == "client" && status.clientGrant?.source == "token_exchange")
            let row = try await database.sql("SELECT encode(sealed, 'escape') FROM bearerd_sessions")
            #expect(!row.contains("platform-token") && !row.contains("exchanged-0"), "sealed in the row")
        }
    }
}
