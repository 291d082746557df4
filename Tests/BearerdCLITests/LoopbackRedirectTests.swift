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

    /// The redirect with the login's state is the answer and waits for its page; one with
    /// another state is refused and the wait goes on; a later one is told the login is over;
    /// another path is 404.
    @Test func onlyTheLoginsStateIsTheAnswerAndOnlyOnce() async throws {
        let listener = try await LoopbackRedirect.listen(port: 0, group: MultiThreadedEventLoopGroup.singleton)
        #expect(listener.redirectURI == "http://127.0.0.1:\(listener.port)/callback")
        listener.expect(state: "s1", authorizationURL: "https://idp.example/authorize?x=1")
        var events = listener.seen.makeAsyncIterator()
        #expect(try await Self.get(listener.port, "/favicon.ico").hasPrefix("HTTP/1.1 404"))
        let forged = try await Self.get(listener.port, "/callback?error=access_denied&state=other")
        #expect(forged.hasPrefix("HTTP/1.1 400") && forged.contains("state differs"), "\(forged)")
        let stateless = try await Self.get(listener.port, "/callback?error=access_denied")
        #expect(stateless.hasPrefix("HTTP/1.1 400"))
        #expect(listener.refusedCount == 2)
        // A flood of forged redirects does not crowd out the answer.
        for _ in 0..<40 { _ = try await Self.get(listener.port, "/callback?code=x&state=forged") }
        #expect(listener.refusedCount == 42)
        async let first = Self.get(listener.port, "/callback?code=c1&state=s1")
        guard case .arrival(let arrival) = await events.next() else {
            Issue.record("no arrival")
            return
        }
        #expect(arrival.parameters == ["code": "c1", "state": "s1"])
        let second = try await Self.get(listener.port, "/callback?code=c2&state=s1")
        #expect(second.hasPrefix("HTTP/1.1 409"), "\(second)")
        await arrival.show(RedirectPage(title: "Logged in", message: "You can close this tab.", worked: true))
        let page = try await first
        #expect(page.hasPrefix("HTTP/1.1 200") && page.contains("You can close this tab."), "\(page)")
        #expect(page.lowercased().contains("content-security-policy: default-src 'none'"))
        await listener.close()
    }

    /// DNS rebinding: a page on another name that resolves to 127.0.0.1 gets nothing.
    @Test func anotherHostIsRefused() async throws {
        let listener = try await LoopbackRedirect.listen(port: 0, group: MultiThreadedEventLoopGroup.singleton)
        listener.expect(state: "s1", authorizationURL: "https://idp.example/authorize")
        let rebound = try await Self.get(
            listener.port,
            "/callback?code=c&state=s1",
            host: "evil.example:\(listener.port)"
        )
        #expect(rebound.hasPrefix("HTTP/1.1 400"))
        let start = try await Self.get(listener.port, "/start?k=x", host: "evil.example")
        #expect(start.hasPrefix("HTTP/1.1 400"))
        await listener.close()
    }

    /// The browser is given the start address; it goes on to the authorization URL once, and a
    /// second opening (someone else on the host) stops the login.
    @Test func theStartAddressWorksOnceAndASecondOpeningIsReported() async throws {
        let listener = try await LoopbackRedirect.listen(port: 0, group: MultiThreadedEventLoopGroup.singleton)
        let start = String(listener.startURL.dropFirst("http://127.0.0.1:\(listener.port)".count))
        #expect(try await Self.get(listener.port, start).hasPrefix("HTTP/1.1 404"), "not before the login began")
        listener.expect(state: "s1", authorizationURL: "https://idp.example/authorize?state=s1")
        #expect(try await Self.get(listener.port, "/start?k=wrong").hasPrefix("HTTP/1.1 404"))
        let first = try await Self.get(listener.port, start)
        #expect(first.hasPrefix("HTTP/1.1 302") && first.contains("location: https://idp.example/authorize?state=s1"))
        let again = try await Self.get(listener.port, start)
        #expect(again.hasPrefix("HTTP/1.1 409"), "\(again)")
        var events = listener.seen.makeAsyncIterator()
        guard case .openedTwice = await events.next() else {
            Issue.record("a second opening was not reported")
            return
        }
        await listener.close()
    }

    /// A plain HTTP/1.1 GET over a socket; the whole answer as text.
    static func get(_ port: Int, _ target: String, host: String? = nil) async throws -> String {
        let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .connect(host: "127.0.0.1", port: port) { channel in
                channel.eventLoop.makeCompletedFuture {
                    try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: channel)
                }
            }
        return try await channel.executeThenClose { inbound, outbound in
            let name = host ?? "127.0.0.1:\(port)"
            try await outbound.write(ByteBuffer(string: "GET \(target) HTTP/1.1\r\nHost: \(name)\r\n\r\n"))
            var text = ""
            for try await buffer in inbound { text += String(buffer: buffer) }
            return text
        }
    }
}
