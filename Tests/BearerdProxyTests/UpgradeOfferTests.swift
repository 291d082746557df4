import NIOCore
import NIOHTTP1
import Testing

@testable import BearerdProxy
@testable import BearerdWire

/// Issue 35: what of a client's `Upgrade` is offered upstream, and which 101 opens a raw
/// channel. A splice carries bytes past every per-request check, so only a 101 that really
/// switched to a protocol the client asked for and the settings allow may open one.
@Suite("Upgrade offers: what goes upstream and which 101 is spliced")
struct UpgradeOfferTests {
    /// RFC 6455 §1.3's example key and its accept value.
    static let key = "dGhlIHNhbXBsZSBub25jZQ=="
    static let accept = "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="

    static func head(
        _ fields: [(String, String)],
        method: HTTPMethod = .GET,
        minor: Int = 1
    ) throws -> RequestHead {
        var bytes = ByteBuffer(string: "\(method.rawValue) /chat HTTP/1.\(minor)\r\nHost: h\r\n")
        for (name, value) in fields { bytes.writeString("\(name): \(value)\r\n") }
        bytes.writeString("\r\n")
        return try RequestHead.parse(bytes, limits: RequestHead.testLimits)
    }

    /// A WebSocket handshake's fields with `upgrade` as its `Upgrade`.
    static func handshake(_ upgrade: String, key: String = Self.key, version: String = "13") -> [(String, String)] {
        [
            ("Upgrade", upgrade), ("Connection", "Upgrade"), ("Sec-WebSocket-Key", key),
            ("Sec-WebSocket-Version", version),
        ]
    }

    static func offer(_ protocols: String..., key: String? = UpgradeOfferTests.key) -> UpgradeOffer.Decision {
        .offer(UpgradeOffer(protocols: protocols, webSocketKey: key))
    }

    struct RequestCase: Sendable, CustomTestStringConvertible {
        var name: String
        var fields: [(String, String)]
        var allowed: Set<String> = ["websocket"]
        var method: HTTPMethod = .GET
        var minor = 1
        var expected: UpgradeOffer.Decision
        var testDescription: String { self.name }
    }

    static let refusedKey = UpgradeOffer.Decision.refused(
        "a WebSocket handshake needs one Sec-WebSocket-Key of 16 bytes in base64 (RFC 6455 §4.1)"
    )
    static let refusedVersion = UpgradeOffer.Decision.refused(
        "a WebSocket handshake needs Sec-WebSocket-Version: 13 (RFC 6455 §4.1)"
    )

    static let requests: [RequestCase] = [
        RequestCase(name: "websocket", fields: handshake("websocket"), expected: offer("websocket")),
        RequestCase(name: "websocket, h2c", fields: handshake("websocket, h2c"), expected: offer("websocket")),
        RequestCase(name: "h2c, websocket", fields: handshake("h2c, websocket"), expected: offer("websocket")),
        RequestCase(
            name: "two Upgrade fields",
            fields: handshake("h2c") + [("Upgrade", "WebSocket")],
            expected: offer("WebSocket")
        ),
        RequestCase(name: "h2c only", fields: handshake("h2c"), expected: .dropped),
        RequestCase(
            name: "h2c even when allowed",
            fields: [("Upgrade", "h2c"), ("Connection", "Upgrade, HTTP2-Settings"), ("HTTP2-Settings", "AAMAAABk")],
            allowed: ["h2c", "websocket"],
            expected: .dropped
        ),
        RequestCase(
            name: "two allowed, one repeated",
            fields: handshake("foo/2, websocket, Foo/3, bar"),
            allowed: ["foo", "websocket"],
            expected: offer("foo/2", "websocket")
        ),
        RequestCase(
            name: "another protocol needs no key",
            fields: [("Upgrade", "foo"), ("Connection", "upgrade")],
            allowed: ["foo", "websocket"],
            expected: offer("foo", key: nil)
        ),
        RequestCase(name: "nothing allowed", fields: handshake("websocket"), allowed: [], expected: .dropped),
        RequestCase(name: "not a token", fields: handshake("web socket, websocket/"), expected: .dropped),
        RequestCase(name: "a POST", fields: handshake("websocket"), method: .POST, expected: .dropped),
        RequestCase(name: "HTTP/1.0", fields: handshake("websocket"), minor: 0, expected: .dropped),
        RequestCase(name: "no Connection: upgrade", fields: [("Upgrade", "websocket")], expected: .none),
        RequestCase(name: "no Upgrade", fields: [("Connection", "upgrade")], expected: .none),
        RequestCase(
            name: "no key",
            fields: [("Upgrade", "websocket"), ("Connection", "Upgrade"), ("Sec-WebSocket-Version", "13")],
            expected: refusedKey
        ),
        RequestCase(name: "a short key", fields: handshake("websocket", key: "dGhlIHNhbXBsZQ=="), expected: refusedKey),
        RequestCase(
            name: "a key with bits past 16 bytes",
            fields: handshake("websocket", key: "dGhlIHNhbXBsZSBub25jZR=="),
            expected: refusedKey
        ),
        RequestCase(
            name: "a key not in base64",
            fields: handshake("websocket", key: "dGhlIHNhbXBsZSBub25j*Q=="),
            expected: refusedKey
        ),
        RequestCase(
            name: "two keys",
            fields: handshake("websocket") + [("Sec-WebSocket-Key", "AAAAAAAAAAAAAAAAAAAAAA==")],
            expected: refusedKey
        ),
        RequestCase(name: "version 8", fields: handshake("websocket", version: "8"), expected: refusedVersion),
        RequestCase(
            name: "no version",
            fields: [("Upgrade", "websocket"), ("Connection", "Upgrade"), ("Sec-WebSocket-Key", key)],
            expected: refusedVersion
        ),
    ]

    @Test(arguments: Self.requests)
    func whatARequestOffersUpstream(_ example: RequestCase) throws {
        let head = try Self.head(example.fields, method: example.method, minor: example.minor)
        #expect(UpgradeOffer.decide(head, allowed: example.allowed) == example.expected)
    }

    struct AnswerCase: Sendable, CustomTestStringConvertible {
        var name: String
        var fields: [String]
        var offer = UpgradeOffer(protocols: ["websocket"], webSocketKey: UpgradeOfferTests.key)
        /// The protocol spliced to, or nil for a broken 101.
        var splice: String?
        var statusLine = "HTTP/1.1 101 Switching Protocols"
        var testDescription: String { self.name }
    }

    static let foo = UpgradeOffer(protocols: ["foo/2"], webSocketKey: nil)

    static let answers: [AnswerCase] = [
        AnswerCase(
            name: "a WebSocket switch",
            fields: ["Upgrade: websocket", "Connection: Upgrade", "Sec-WebSocket-Accept: \(accept)"],
            splice: "websocket"
        ),
        AnswerCase(
            name: "names in another case, upgrade among other options",
            fields: ["upgrade: WebSocket", "connection: keep-alive, UPGRADE", "sec-websocket-accept: \(accept)"],
            splice: "WebSocket"
        ),
        AnswerCase(name: "a bare 101", fields: []),
        AnswerCase(
            name: "HTTP/1.0",
            fields: ["Upgrade: websocket", "Connection: Upgrade", "Sec-WebSocket-Accept: \(accept)"],
            statusLine: "HTTP/1.0 101 Switching Protocols"
        ),
        AnswerCase(name: "no Upgrade", fields: ["Connection: Upgrade", "Sec-WebSocket-Accept: \(accept)"]),
        AnswerCase(name: "no Connection", fields: ["Upgrade: websocket", "Sec-WebSocket-Accept: \(accept)"]),
        AnswerCase(
            name: "Connection without upgrade",
            fields: ["Upgrade: websocket", "Connection: keep-alive", "Sec-WebSocket-Accept: \(accept)"]
        ),
        AnswerCase(name: "h2c", fields: ["Upgrade: h2c", "Connection: Upgrade"]),
        AnswerCase(
            name: "two protocols",
            fields: ["Upgrade: websocket, h2c", "Connection: Upgrade", "Sec-WebSocket-Accept: \(accept)"]
        ),
        AnswerCase(
            name: "two Upgrade fields",
            fields: [
                "Upgrade: websocket", "Upgrade: websocket", "Connection: Upgrade", "Sec-WebSocket-Accept: \(accept)",
            ]
        ),
        AnswerCase(name: "no accept", fields: ["Upgrade: websocket", "Connection: Upgrade"]),
        AnswerCase(
            name: "a wrong accept",
            fields: ["Upgrade: websocket", "Connection: Upgrade", "Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOp="]
        ),
        AnswerCase(
            name: "the key echoed as accept",
            fields: ["Upgrade: websocket", "Connection: Upgrade", "Sec-WebSocket-Accept: \(key)"]
        ),
        AnswerCase(
            name: "two accepts",
            fields: [
                "Upgrade: websocket", "Connection: Upgrade", "Sec-WebSocket-Accept: \(accept)",
                "Sec-WebSocket-Accept: \(accept)",
            ]
        ),
        AnswerCase(
            name: "another offered protocol",
            fields: ["Upgrade: foo", "Connection: upgrade"],
            offer: foo,
            splice: "foo"
        ),
        AnswerCase(
            name: "websocket when only another was offered",
            fields: ["Upgrade: websocket", "Connection: upgrade", "Sec-WebSocket-Accept: \(accept)"],
            offer: foo
        ),
    ]

    @Test(arguments: Self.answers)
    func whichA101IsSpliced(_ example: AnswerCase) throws {
        let text = example.statusLine + "\r\n" + example.fields.map { $0 + "\r\n" }.joined() + "\r\n"
        let head = try ResponseHead.parse(ByteBuffer(string: text))
        let answer = example.offer.answer(to: head)
        if let splice = example.splice {
            #expect(answer == .splice(splice))
        } else if case .splice = answer {
            Issue.record("spliced \(example.name)")
        }
    }

    @Test func theAcceptIsRFC6455s() {
        #expect(UpgradeOffer.webSocketAccept(forKey: Self.key) == Self.accept)
    }
}
