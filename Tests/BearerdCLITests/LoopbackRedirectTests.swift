import Foundation
import NIOCore
import NIOPosix
import Testing

@testable import BearerdCLI

/// The CLI's end of the browser login: the listener the browser comes back to.
@Suite("Browser login: the loopback listener")
struct LoopbackRedirectTests {
    @Test func aQueryIsDecodedAndARepeatedParameterRefused() {
        #expect(
            LoopbackRedirect.parameters(query: "code=a%2Fb+c&state=s&iss=https%3A%2F%2Fidp")
                == ["code": "a/b c", "state": "s", "iss": "https://idp"]
        )
        #expect(LoopbackRedirect.parameters(query: "code=a&code=b&state=s") == nil)
        #expect(LoopbackRedirect.parameters(query: "code=%ZZ") == nil)
        #expect(LoopbackRedirect.parameters(query: "") == [:])
    }

    @Test func whatTheServerSaysIsShownAsTextNeverAsMarkup() {
        let page = RedirectPage(title: "Login failed", message: #"<script>alert("x")</script> & 'more'"#)
        #expect(!page.html.contains("<script>"))
        #expect(page.html.contains("&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &#39;more&#39;"))
    }

    /// The first `/callback` is the answer and waits for its page; another path is 404; a
    /// second redirect is told the login is over.
    @Test func theFirstRedirectIsTheAnswerAndASecondIsToldItIsOver() async throws {
        let listener = try await LoopbackRedirect.listen(port: 0, group: MultiThreadedEventLoopGroup.singleton)
        #expect(listener.redirectURI == "http://127.0.0.1:\(listener.port)/callback")
        async let favicon = Self.get(listener.port, "/favicon.ico")
        #expect(try await favicon.hasPrefix("HTTP/1.1 404"))
        async let first = Self.get(listener.port, "/callback?code=c1&state=s1")
        let arrival = try #require(await listener.next())
        #expect(arrival.parameters == ["code": "c1", "state": "s1"])
        let second = try await Self.get(listener.port, "/callback?code=c2&state=s2")
        #expect(second.hasPrefix("HTTP/1.1 409"), "\(second)")
        await arrival.show(RedirectPage(title: "Logged in", message: "You can close this tab.", worked: true))
        let page = try await first
        #expect(page.hasPrefix("HTTP/1.1 200") && page.contains("You can close this tab."), "\(page)")
        #expect(page.lowercased().contains("content-security-policy: default-src 'none'"))
        await listener.close()
    }

    /// A plain HTTP/1.1 GET over a socket; the whole answer as text.
    static func get(_ port: Int, _ target: String) async throws -> String {
        let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .connect(host: "127.0.0.1", port: port) { channel in
                channel.eventLoop.makeCompletedFuture {
                    try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: channel)
                }
            }
        return try await channel.executeThenClose { inbound, outbound in
            try await outbound.write(ByteBuffer(string: "GET \(target) HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"))
            var text = ""
            for try await buffer in inbound { text += String(buffer: buffer) }
            return text
        }
    }
}
