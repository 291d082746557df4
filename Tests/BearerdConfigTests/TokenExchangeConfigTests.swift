import BearerdConfig
import BearerdTestSupport
import BearerdTokens
import Foundation
import Testing

@Suite("auth.token_exchange and auth.client_assertion_file")
struct TokenExchangeConfigTests {
    let directory: TemporaryDirectory
    let subject: String

    init() throws {
        self.directory = try TemporaryDirectory()
        self.subject = try self.directory.write("platform-token", to: "subject", mode: 0o640)
    }

    func load(_ auth: String) throws -> BearerdConfiguration {
        let body = """
            upstream:
              url: https://api.example.com
            auth:
            \(auth)
            """
        return try ConfigLoader(environment: [:]).load(yaml: body, source: "t.yaml", baseDirectory: self.directory.path)
    }

    func issues(_ auth: String) -> [ConfigIssue] {
        do {
            _ = try self.load(auth)
            return []
        } catch let error as ConfigError {
            return error.issues
        } catch {
            return [ConfigIssue(key: "-", message: "\(error)")]
        }
    }

    @Test func theExchangeIsReadWithItsTypesAsURIs() throws {
        let config = try self.load(
            """
              token_url: https://idp.example/token
              client_id: workload
              token_exchange:
                subject_token_file: subject
                subject_token_type: id_token
                audience: ["api://a", "api://b"]
                resource: ["https://api.example.com/v1"]
                requested_token_type: access_token
            """
        )
        guard case .oauth2(let oauth2) = config.auth.source, let exchange = oauth2.tokenExchange else {
            throw TestClientError("no exchange")
        }
        #expect(exchange.subjectTokenFile == self.subject)
        #expect(exchange.subjectTokenType == "urn:ietf:params:oauth:token-type:id_token")
        #expect(exchange.requestedTokenType == "urn:ietf:params:oauth:token-type:access_token")
        #expect(exchange.audiences == ["api://a", "api://b"] && exchange.resources == ["https://api.example.com/v1"])
        #expect(oauth2.hasClientGrant && !oauth2.clientCredentials)
    }

    @Test func theKeysDoNotApplyToAnotherSource() {
        let found = self.issues(
            """
              json:
                refresh_url: https://api.example.com/refresh
              token_exchange:
                subject_token_file: subject
              client_assertion_file: subject
            """
        )
        #expect(
            found.contains { $0.key == "auth.token_exchange.subject_token_file" && $0.message.contains("OAuth 2.0") }
        )
        #expect(found.contains { $0.key == "auth.client_assertion_file" && $0.message.contains("OAuth 2.0") })
    }

    @Test func aWorldReadableTokenFileIsRefusedWithTheKubernetesWay() throws {
        chmod(self.subject, 0o644)
        let found = self.issues(
            """
              token_url: https://idp.example/token
              client_id: workload
              token_exchange:
                subject_token_file: subject
            """
        )
        #expect(
            found.contains { $0.key == "auth.token_exchange.subject_token_file" && $0.message.contains("defaultMode") }
        )
    }
}
