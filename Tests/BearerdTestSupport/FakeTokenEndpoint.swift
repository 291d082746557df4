import BearerdTokens
import Foundation
import Synchronization

/// A token endpoint in memory: records every request and answers with `respond`, which may
/// wait (to hold a refresh in flight) or throw (a network error).
package final class FakeTokenEndpoint: TokenTransport {
    package typealias Respond = @Sendable (TokenHTTPRequest, Int) async throws -> TokenHTTPResponse

    private let recorded = Mutex<[TokenHTTPRequest]>([])
    private let respond: Mutex<Respond>

    package init(_ respond: @escaping Respond) {
        self.respond = Mutex(respond)
    }

    /// Answers from now on with `respond`.
    package func answer(_ respond: @escaping Respond) {
        self.respond.withLock { $0 = respond }
    }

    package var requests: [TokenHTTPRequest] { self.recorded.withLock { $0 } }

    package func send(_ request: TokenHTTPRequest) async throws -> TokenHTTPResponse {
        let index = self.recorded.withLock { recorded in
            recorded.append(request)
            return recorded.count - 1
        }
        let respond = self.respond.withLock { $0 }
        return try await respond(request, index)
    }

    /// A JSON answer.
    package static func json(_ text: String, status: Int = 200, headers: [(String, String)] = []) -> TokenHTTPResponse {
        TokenHTTPResponse(
            status: status,
            headers: [("content-type", "application/json")] + headers,
            body: Array(text.utf8)
        )
    }

    /// An RFC 6749 token response.
    package static func tokens(
        access: String,
        refresh: String? = nil,
        expiresIn: Int? = 3600,
        headers: [(String, String)] = []
    ) -> TokenHTTPResponse {
        var fields = ["\"access_token\":\"\(access)\"", "\"token_type\":\"Bearer\""]
        if let refresh { fields.append("\"refresh_token\":\"\(refresh)\"") }
        if let expiresIn { fields.append("\"expires_in\":\(expiresIn)") }
        return Self.json("{" + fields.joined(separator: ",") + "}", headers: headers)
    }

    /// The form fields of a request body.
    package static func form(_ request: TokenHTTPRequest) -> [String: String] {
        let text = String(decoding: request.body ?? [], as: UTF8.self)
        var fields: [String: String] = [:]
        for pair in text.split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let name = String(parts[0]).removingPercentEncoding ?? String(parts[0])
            let value = parts.count > 1 ? (String(parts[1]).removingPercentEncoding ?? String(parts[1])) : ""
            fields[name] = value
        }
        return fields
    }
}

/// A door tasks wait at until a test opens it.
package actor Gate {
    private var isOpen = false
    private var waiters: [CheckedContinuation<Void, Never>] = []

    package init() {}

    package func wait() async {
        if self.isOpen { return }
        await withCheckedContinuation { self.waiters.append($0) }
    }

    package func open() {
        self.isOpen = true
        for waiter in self.waiters { waiter.resume() }
        self.waiters.removeAll()
    }
}
