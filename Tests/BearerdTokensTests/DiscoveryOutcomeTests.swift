import BearerdAuth
import BearerdTestSupport
import Testing

@testable import BearerdTokens

/// Whether a discovery that found no metadata is the configuration's fault (`source`: asking again
/// will not help) or the moment's (`unreachable`: the issuer may answer later).
@Suite("Discovery without metadata")
struct DiscoveryOutcomeTests {
    struct Failure: Error {}

    @Test(arguments: [
        ([404, 404, 404], TokenEngineError.Code.source),
        ([410, 404, 200], .source),
        ([404, 503, 404], .unreachable),
        ([502, 502, 502], .unreachable),
        ([404, 429, 404], .unreachable),
        ([0, 404, 404], .unreachable),
    ])
    func definiteAnswersAreAConfigErrorAndTransientOnesAreNot(statuses: [Int], code: TokenEngineError.Code) async {
        let issuer = "https://idp.example/realms/x"
        let candidates = Discovery.candidates(issuer: issuer)
        let transport = FakeTokenEndpoint { request, _ in
            let status = statuses[candidates.firstIndex(of: request.url) ?? 0]
            // 0: no answer at all; 200: a page that is not metadata.
            if status == 0 { throw Failure() }
            return TokenHTTPResponse(status: status, body: Array("<html>not here</html>".utf8))
        }
        let source = OAuth2Source(settings: .init(endpoint: .issuer(issuer), clientID: "c"))
        let error = await #expect(throws: TokenEngineError.self) {
            try await source.refreshRequest(Secret("r"), transport: transport)
        }
        #expect(error?.code == code, "\(String(describing: error))")
    }
}
