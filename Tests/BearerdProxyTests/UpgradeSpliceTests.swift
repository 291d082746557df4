import NIOCore
import NIOEmbedded
import Testing

@testable import BearerdProxy

/// Issue 35 on a manual clock: a 101 that is no switch to what the request offered gets 502 and
/// closes both connections, so the raw HTTP/1.1 a client sends after its handshake (any method,
/// path and `Host`, past the lists and the header filter) never reaches the upstream.
@Suite("Upgrades: which 101 opens a raw channel")
struct UpgradeSpliceTests {
    static let key = UpgradeOfferTests.key
    static let accept = UpgradeOfferTests.accept

    static let handshake =
        "GET /chat HTTP/1.1\r\nHost: h\r\nUpgrade: websocket, h2c\r\nConnection: Upgrade, HTTP2-Settings\r\n"
        + "HTTP2-Settings: AAMAAABkAAQAAP__\r\nSec-WebSocket-Key: \(key)\r\nSec-WebSocket-Version: 13\r\n\r\n"
    /// What a client sends after its handshake when it hopes for a tunnel.
    static let smuggled = "GET /admin HTTP/1.1\r\nHost: internal\r\n\r\n"

    /// A proxy that sent the handshake (and the smuggled request right behind it) upstream.
    static func proxyAfterHandshake() throws -> EmbeddedProxy {
        let proxy = try EmbeddedProxy("")
        try proxy.send(Self.handshake + Self.smuggled)
        let sent = try proxy.upstream.sent()
        #expect(sent.hasPrefix("GET /chat HTTP/1.1\r\n"), "\(sent)")
        #expect(sent.contains("\r\nupgrade: websocket\r\n"), "\(sent)")
        #expect(!sent.lowercased().contains("h2c") && !sent.lowercased().contains("http2-settings"), "\(sent)")
        #expect(!sent.contains("/admin"), "held until the upstream switches")
        return proxy
    }

    @Test func aWebSocket101WithItsAcceptIsSpliced() throws {
        let proxy = try Self.proxyAfterHandshake()
        try proxy.upstream.answer(
            "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                + "Sec-WebSocket-Accept: \(Self.accept)\r\n\r\nframe"
        )
        let received = try proxy.received()
        #expect(received.hasPrefix("HTTP/1.1 101 "), "\(received)")
        #expect(received.contains("upgrade: websocket\r\n") && received.hasSuffix("\r\n\r\nframe"), "\(received)")
        #expect(try proxy.upstream.sent() == Self.smuggled, "what followed the handshake is the new protocol's")
        #expect(proxy.upstream.channels[0].isActive)
    }

    static let broken = [
        "HTTP/1.1 101 Switching Protocols\r\n\r\n",
        "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\n\r\n",
        "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nSec-WebSocket-Accept: \(accept)\r\n\r\n",
        "HTTP/1.1 101 Switching Protocols\r\nUpgrade: h2c\r\nConnection: Upgrade\r\n\r\n",
        "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket, h2c\r\nConnection: Upgrade\r\n"
            + "Sec-WebSocket-Accept: \(accept)\r\n\r\n",
        "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n",
        "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            + "Sec-WebSocket-Accept: \(key)\r\n\r\n",
    ]

    @Test(arguments: Self.broken)
    func a101ThatIsNoSwitchGets502AndClosesBoth(_ answer: String) throws {
        let proxy = try Self.proxyAfterHandshake()
        try proxy.upstream.answer(answer + "HTTP/1.1 200 OK\r\n\r\n")
        let received = try proxy.received()
        #expect(received.hasPrefix("HTTP/1.1 502 "), "\(received)")
        #expect(received.contains("connection: close"), "\(received)")
        #expect(!proxy.upstream.channels[0].isActive, "the upstream connection is closed, not pooled")
        try? proxy.send("GET /admin2 HTTP/1.1\r\nHost: internal\r\n\r\n")
        #expect(try proxy.upstream.sent().isEmpty, "nothing the client sent after the handshake went upstream")
        #expect(proxy.upstream.channels.count == 1)
    }

    @Test func a101ToARequestThatOfferedNoUpgradeGets502AndClosesBoth() throws {
        for request in [
            "GET /a HTTP/1.1\r\nHost: h\r\n\r\n",
            // Upgrade to a protocol not allowed: the request goes as a plain GET.
            "GET /a HTTP/1.1\r\nHost: h\r\nUpgrade: foo\r\nConnection: upgrade\r\n\r\n",
        ] {
            let proxy = try EmbeddedProxy("")
            try proxy.send(request + Self.smuggled)
            let sent = try proxy.upstream.sent()
            #expect(!sent.lowercased().contains("upgrade"), "\(sent)")
            try proxy.upstream.answer("HTTP/1.1 101 Switching Protocols\r\nUpgrade: foo\r\nConnection: Upgrade\r\n\r\n")
            let received = try proxy.received()
            #expect(received.hasPrefix("HTTP/1.1 502 "), "\(received)")
            #expect(received.contains("connection: close"), "\(received)")
            #expect(!proxy.upstream.channels[0].isActive)
            #expect(try proxy.upstream.sent().isEmpty, "\(request)")
        }
    }

    /// The WebSocket fields of handshakes bearerd refuses.
    static let badHandshakes = [
        "Sec-WebSocket-Version: 13\r\n", "Sec-WebSocket-Key: c2hvcnQ=\r\nSec-WebSocket-Version: 13\r\n",
        "Sec-WebSocket-Key: \(key)\r\n", "Sec-WebSocket-Key: \(key)\r\nSec-WebSocket-Version: 8\r\n",
    ]

    @Test(arguments: Self.badHandshakes)
    func aWebSocketHandshakeWithoutAValidKeyAndVersionGets400BeforeAnythingGoesUpstream(_ fields: String) throws {
        let proxy = try EmbeddedProxy("")
        try proxy.send("GET /chat HTTP/1.1\r\nHost: h\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\(fields)\r\n")
        let received = try proxy.received()
        #expect(received.hasPrefix("HTTP/1.1 400 "), "\(received)")
        #expect(received.contains("Sec-WebSocket-"), "\(received)")
        #expect(proxy.upstream.channels.isEmpty)
    }
}
