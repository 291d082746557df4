/// A request to a token endpoint, built by a ``TokenSource``. Its body may hold secrets: it is
/// never logged.
package struct TokenHTTPRequest: Sendable {
    package var method: String
    package var url: String
    package var headers: [(String, String)]
    package var body: [UInt8]?

    package init(method: String = "POST", url: String, headers: [(String, String)] = [], body: [UInt8]? = nil) {
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
    }
}

/// A token endpoint's answer.
package struct TokenHTTPResponse: Sendable {
    package var status: Int
    package var headers: [(String, String)]
    package var body: [UInt8]

    package init(status: Int, headers: [(String, String)] = [], body: [UInt8] = []) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// The first value of header `name`, compared without case.
    package func header(_ name: String) -> String? {
        self.headers.first { $0.0.lowercased() == name }?.1
    }
}

/// Sends requests to token endpoints: the one I/O seam of the token engine.
package protocol TokenTransport: Sendable {
    /// Sends `request`; throws on network errors and timeouts (a non-2xx answer is not an error).
    func send(_ request: TokenHTTPRequest) async throws -> TokenHTTPResponse
}
