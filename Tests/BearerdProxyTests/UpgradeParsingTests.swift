import BearerdConfig
import BearerdTestSupport
import NIOCore
import NIOHTTP1
import Testing

@testable import BearerdProxy
@testable import BearerdWire

/// The pieces of an upgrade (`proxy.allow_upgrades`) that need no network: what the parser takes
/// after a request that asked to switch, and what goes upstream for which protocol.
@Suite("Upgrades: the 101, the handshake sent upstream, the config")
struct UpgradeParsingTests {
    @Test func a101EndsTheResponseOnlyAfterARequestThatAskedForIt() throws {
        let switching =
            "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\nws!!"
        var parser = ResponseParser()
        parser.expectResponse(toHEAD: false, upgrade: true)
        var bytes = ByteBuffer(string: switching)
        guard case .head(let head)? = try parser.next(from: &bytes) else {
            Issue.record("no head")
            return
        }
        #expect(head.status == 101)
        #expect(bytes.readableBytes == 4, "the new protocol's bytes are left for the splice")
        #expect(try parser.next(from: &bytes) == nil, "nothing more is parsed")

        // Asked for, but answered with an ordinary response: read as one.
        parser.expectResponse(toHEAD: false, upgrade: true)
        var refused = ByteBuffer(string: "HTTP/1.1 426 Upgrade Required\r\nContent-Length: 2\r\n\r\nno")
        var parts: [String] = []
        while let part = try parser.next(from: &refused) {
            switch part {
            case .head(let head): parts.append("head \(head.status)")
            case .body(let body): parts.append("body \(String(buffer: body))")
            case .end: parts.append("end")
            }
            if parts.last == "end" { break }
        }
        #expect(parts == ["head 426", "body no", "end"])

        // Not asked for: still an error, as before.
        parser.expectResponse(toHEAD: false)
        var unasked = ByteBuffer(string: switching)
        #expect(throws: ProxyError.self) { _ = try parser.next(from: &unasked) }
    }

    static func settings(_ yaml: String = "") throws -> ProxySettings {
        let directory = try TemporaryDirectory()
        let token = try directory.write("t0ken\n", to: "token")
        let text =
            "listen: [\"127.0.0.1:0\"]\nupstream:\n  url: http://127.0.0.1:9\nauth:\n  static_token_file: \(token)\n"
        return try ProxySettings(
            configuration: try ConfigLoader(environment: [:]).load(yaml: text + yaml, source: "t", baseDirectory: "/")
        )
    }

    static func upstreamHead(
        _ headers: HTTPHeaders,
        settings: ProxySettings
    ) throws -> (String, UpgradeOffer.Decision) {
        var head = HTTPRequestHead(version: .http1_1, method: .GET, uri: "/ws")
        head.headers = headers
        var buffer = ByteBuffer()
        let (_, upgrade) = HeaderRewriter.upstreamRequest(
            try RequestHead(head),
            target: .rewritten(try #require(CanonicalTarget.parse("/ws", allowPathParams: false).value)),
            token: nil,
            peer: "127.0.0.1",
            settings: ProxySettings.Shared(settings),
            into: &buffer
        )
        return (String(buffer: buffer).lowercased(), upgrade)
    }

    static let key = "dGhlIHNhbXBsZSBub25jZQ=="

    @Test func theHandshakeKeepsItsUpgradeOnlyForAnAllowedProtocol() throws {
        let websocket: HTTPHeaders = [
            "upgrade": "websocket", "connection": "Upgrade", "sec-websocket-key": Self.key,
            "sec-websocket-version": "13",
        ]
        let (allowed, decision) = try Self.upstreamHead(websocket, settings: try Self.settings())
        #expect(allowed.contains("connection: upgrade\r\nupgrade: websocket\r\n"))
        #expect(allowed.contains("sec-websocket-key: \(Self.key.lowercased())\r\n"))
        #expect(decision == .offer(UpgradeOffer(protocols: ["websocket"], webSocketKey: Self.key)))
        let (other, dropped) = try Self.upstreamHead(
            ["upgrade": "h2c", "connection": "Upgrade, HTTP2-Settings", "http2-settings": "AAMAAABkAAQAAP__"],
            settings: try Self.settings()
        )
        #expect(!other.contains("upgrade: ") && !other.contains("http2-settings") && dropped == .dropped, "\(other)")
        let (off, _) = try Self.upstreamHead(websocket, settings: try Self.settings("proxy:\n  allow_upgrades: []"))
        #expect(!off.contains("upgrade: "), "\(off)")
        let (plain, none) = try Self.upstreamHead(["upgrade": "websocket"], settings: try Self.settings())
        #expect(!plain.contains("upgrade: ") && none == .none, "Upgrade without Connection: upgrade is no upgrade")
    }

    /// Issue 35: the whole list went upstream when its first protocol was allowed, and
    /// `HTTP2-Settings` with it unless `Connection` named it.
    @Test func onlyTheAllowedProtocolsOfTheListGoUpstreamAndNeverHTTP2Settings() throws {
        var headers: HTTPHeaders = [
            "upgrade": "websocket, h2c", "connection": "Upgrade", "http2-settings": "AAMAAABkAAQAAP__",
            "sec-websocket-key": Self.key, "sec-websocket-version": "13",
        ]
        let (sent, decision) = try Self.upstreamHead(headers, settings: try Self.settings())
        #expect(sent.contains("\r\nupgrade: websocket\r\n"), "\(sent)")
        #expect(!sent.contains("h2c") && !sent.contains("http2-settings"), "\(sent)")
        #expect(decision == .offer(UpgradeOffer(protocols: ["websocket"], webSocketKey: Self.key)))
        headers.replaceOrAdd(name: "upgrade", value: "h2c, websocket")
        let (reversed, _) = try Self.upstreamHead(headers, settings: try Self.settings())
        #expect(reversed.contains("\r\nupgrade: websocket\r\n") && !reversed.contains("h2c"), "\(reversed)")
    }

    @Test func h2cCannotBeAllowed() throws {
        for listed in ["[h2c]", "[websocket, H2C]", "[h2]"] {
            #expect(throws: ConfigError.self) {
                _ = try Self.settings("proxy:\n  allow_upgrades: \(listed)")
            }
        }
    }

    @Test func aProtocolNameThatIsNotOneIsRefusedByKey() {
        for bad in ["web socket", "websocket/13", String(repeating: "a", count: 40), ""] {
            #expect(throws: ConfigError.self) {
                _ = try Self.settings("proxy:\n  allow_upgrades: [\"\(bad)\"]")
            }
        }
    }
}
