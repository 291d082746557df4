import Foundation
import NIOCore
import NIOHTTP1
import Synchronization

/// An OAuth 2.0 server over real HTTP on 127.0.0.1:0, for the binary's tests: the password,
/// refresh_token (rotating, with reuse refused), client_credentials and device code grants
/// (RFC 8628, approved at the second poll), and RFC 7009 revocation. User alice / alice-pass.
/// Tokens are `fake-access-N` and `fake-refresh-N`.
package final class FakeOAuthServer: Sendable {
    struct State {
        var issued = 0
        var liveRefresh: Set<String> = []
        var revoked: [String] = []
        var devicePolls = 0
        var grants: [String] = []
    }

    final class Holder: Sendable {
        let state = Mutex(State())
    }

    private let server: TestUpstream
    private let holder: Holder
    package var port: Int { self.server.port }
    package var base: String { "http://127.0.0.1:\(self.server.port)" }

    /// Tokens revoked at `/revoke`.
    package var revoked: [String] { self.holder.state.withLock { $0.revoked } }
    /// The grant types asked for at `/token`, in order.
    package var grants: [String] { self.holder.state.withLock { $0.grants } }
    /// The last access token issued.
    package var lastAccessToken: String? {
        self.holder.state.withLock { $0.issued == 0 ? nil : "fake-access-\($0.issued)" }
    }

    private init(server: TestUpstream, holder: Holder) {
        self.server = server
        self.holder = holder
    }

    package static func start(group: any EventLoopGroup, lifetime: Int = 3600) async throws -> FakeOAuthServer {
        let holder = Holder()
        let server = try await TestUpstream.start(group: group) { request in
            holder.state.withLock { Self.answer(request, state: &$0, lifetime: lifetime) }
        }
        return FakeOAuthServer(server: server, holder: holder)
    }

    package func stop() async {
        await self.server.stop()
    }

    private static func answer(_ request: RecordedRequest, state: inout State, lifetime: Int) -> TestResponse {
        let form = Self.form(request.bodyText)
        switch request.head.uri {
        case "/revoke":
            if let token = form["token"] {
                state.revoked.append(token)
                state.liveRefresh.remove(token)
            }
            return .respond(status: .ok, headers: [], body: "")
        case "/device":
            return Self.json(
                #"{"device_code":"fake-device-code","user_code":"FAKE-CODE","verification_uri":"http://127.0.0.1/device","expires_in":60,"interval":1}"#
            )
        case "/token":
            let grant = form["grant_type"] ?? ""
            state.grants.append(grant)
            switch grant {
            case "password" where form["username"] == "alice" && form["password"] == "alice-pass":
                return Self.issue(&state, lifetime: lifetime, refresh: true)
            case "refresh_token" where state.liveRefresh.remove(form["refresh_token"] ?? "") != nil:
                return Self.issue(&state, lifetime: lifetime, refresh: true)
            case "client_credentials":
                return Self.issue(&state, lifetime: lifetime, refresh: false)
            case "urn:ietf:params:oauth:grant-type:device_code" where form["device_code"] == "fake-device-code":
                state.devicePolls += 1
                if state.devicePolls < 2 {
                    return Self.json(#"{"error":"authorization_pending"}"#, status: .badRequest)
                }
                return Self.issue(&state, lifetime: lifetime, refresh: true)
            default:
                return Self.json(#"{"error":"invalid_grant"}"#, status: .badRequest)
            }
        default:
            return .respond(status: .notFound, headers: [], body: "")
        }
    }

    private static func issue(_ state: inout State, lifetime: Int, refresh: Bool) -> TestResponse {
        state.issued += 1
        var body = #"{"access_token":"fake-access-\#(state.issued)","token_type":"Bearer","expires_in":\#(lifetime)"#
        if refresh {
            let token = "fake-refresh-\(state.issued)"
            state.liveRefresh.insert(token)
            body += #","refresh_token":"\#(token)""#
        }
        return Self.json(body + "}")
    }

    private static func json(_ body: String, status: HTTPResponseStatus = .ok) -> TestResponse {
        .respond(status: status, headers: [("content-type", "application/json")], body: body)
    }

    private static func form(_ text: String) -> [String: String] {
        var fields: [String: String] = [:]
        for pair in text.split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let decode = { (part: Substring) in
                String(part).replacingOccurrences(of: "+", with: " ").removingPercentEncoding ?? String(part)
            }
            fields[decode(parts[0])] = parts.count > 1 ? decode(parts[1]) : ""
        }
        return fields
    }
}
