import BearerdConfig
import Crypto
import Foundation
import NIOCore
import NIOHTTP1

/// The upgrade a request offers the upstream (RFC 9110 §7.8, `proxy.allow_upgrades`), and
/// whether the upstream's 101 takes it up. A value and two rules, apart from the channel:
/// ``decide(_:allowed:)`` says what of the client's `Upgrade` goes upstream, or that the request
/// is refused; ``answer(to:)`` says whether a 101 switched to what was offered, so that the two
/// connections are spliced, or is a broken answer that closes both.
///
/// A spliced connection carries raw bytes past every per-request check (the method and path
/// lists, the header filter) over bearerd's upstream connection, so it opens only when the
/// upstream really switched to a protocol the client asked for and the settings allow: a 101
/// from a route that did not switch (a debug `/status/101`, a framework's bug) must not turn the
/// connection into a tunnel for raw HTTP/1.1.
package struct UpgradeOffer: Equatable, Sendable {
    /// The protocols sent upstream in `Upgrade`, as the client wrote them (`name` or
    /// `name/version`), in its order, one per name.
    package var protocols: [String]
    /// The client's `Sec-WebSocket-Key`, forwarded unchanged, when `websocket` is offered: the
    /// upstream's `Sec-WebSocket-Accept` must answer it (RFC 6455 §4.2.2).
    package var webSocketKey: String?

    package init(protocols: [String], webSocketKey: String?) {
        self.protocols = protocols
        self.webSocketKey = webSocketKey
    }

    /// What a request head asks of an upgrade.
    package enum Decision: Equatable, Sendable {
        /// No upgrade: no `Upgrade` field, or no `upgrade` in `Connection`.
        case none
        /// An upgrade bearerd does not offer (no protocol of the list is allowed, or the request
        /// is not a GET in HTTP/1.1): the request goes as a plain one, without `Upgrade`.
        case dropped
        /// Sent upstream with `Connection: upgrade` and these protocols.
        case offer(UpgradeOffer)
        /// Answered 400 before anything goes upstream: why.
        case refused(String)
    }

    /// What the upstream's 101 means.
    package enum Answer: Equatable, Sendable {
        /// It switched to this offered protocol (as the upstream named it): splice.
        case splice(String)
        /// It is no switch to what was offered: the client gets 502 and both connections close.
        /// Why, for the client's answer and the log (never a value the upstream sent).
        case broken(String)
    }

    /// Protocols never offered, whatever the settings: over an HTTP/2 connection (h2c) the
    /// client would send many requests that no per-request check sees. The config refuses them
    /// too (`proxy.allow_upgrades`).
    package static let neverOffered = BearerdConfiguration.Proxy.multiplexedUpgrades

    /// RFC 6455 §1.3: appended to the key before hashing.
    static let webSocketGUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

    /// Whether `websocket` is among the offered protocols.
    package var offersWebSocket: Bool {
        self.protocols.contains { Self.name(of: $0) == "websocket" }
    }

    /// The `Upgrade` value sent upstream.
    var headerValue: String { self.protocols.joined(separator: ", ") }

    // MARK: The request

    /// What goes upstream for `head`: the protocols of its `Upgrade` fields that `allowed`
    /// (`proxy.allow_upgrades`) lists, when it is a GET in HTTP/1.1 with `upgrade` in
    /// `Connection`; a WebSocket handshake must carry one valid `Sec-WebSocket-Key` and
    /// `Sec-WebSocket-Version: 13` (RFC 6455 §4.1) or is refused.
    package static func decide(_ head: RequestHead, allowed: Set<String>) -> Decision {
        guard head.isUpgrade else { return .none }
        let upgrades = head.values(of: "upgrade")
        guard !upgrades.isEmpty else { return .none }
        guard head.method == .GET, head.version == .http1_1 else { return .dropped }
        var protocols: [String] = []
        var names: Set<String> = []
        for element in upgrades.flatMap(Self.elements) where Self.isProtocol(element) {
            let name = Self.name(of: element)
            guard allowed.contains(name), !Self.neverOffered.contains(name), names.insert(name).inserted else {
                continue
            }
            protocols.append(element)
        }
        guard !protocols.isEmpty else { return .dropped }
        var offer = UpgradeOffer(protocols: protocols, webSocketKey: nil)
        if offer.offersWebSocket {
            let keys = head.values(of: "sec-websocket-key")
            guard keys.count == 1, let key = keys.first, Self.isWebSocketKey(key) else {
                return .refused(
                    "a WebSocket handshake needs one Sec-WebSocket-Key of 16 bytes in base64 (RFC 6455 §4.1)"
                )
            }
            guard head.values(of: "sec-websocket-version") == ["13"] else {
                return .refused("a WebSocket handshake needs Sec-WebSocket-Version: 13 (RFC 6455 §4.1)")
            }
            offer.webSocketKey = key
        }
        return .offer(offer)
    }

    /// `Sec-WebSocket-Key`: 16 bytes in base64, exactly 24 characters (RFC 6455 §4.1): 21 of
    /// the alphabet, one whose low bits are zero, then `==`.
    static func isWebSocketKey(_ key: String) -> Bool {
        let bytes = Array(key.utf8)
        guard bytes.count == 24, bytes[22] == UInt8(ascii: "="), bytes[23] == UInt8(ascii: "=") else { return false }
        guard bytes[..<21].allSatisfy(Self.isBase64Byte) else { return false }
        return [UInt8(ascii: "A"), UInt8(ascii: "Q"), UInt8(ascii: "g"), UInt8(ascii: "w")].contains(bytes[21])
    }

    private static func isBase64Byte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "+"), UInt8(ascii: "/"):
            true
        default:
            false
        }
    }

    // MARK: The 101

    /// Whether the upstream's 101 switched to what was offered: its `Connection` lists
    /// `upgrade`, its `Upgrade` names exactly one protocol, one that was offered, and for
    /// WebSocket its one `Sec-WebSocket-Accept` answers the key sent (RFC 6455 §4.2.2).
    package func answer(to head: ResponseHead) -> Answer {
        guard head.status == 101 else { return .broken("a \(head.status) where a 101 was expected") }
        guard head.minorVersion == 1 else { return .broken("a 101 in HTTP/1.0, which has no upgrades") }
        let connection = head.values(of: "connection").flatMap(Self.elements)
        guard connection.contains(where: { $0.lowercased() == "upgrade" }) else {
            return .broken("a 101 without Connection: upgrade")
        }
        let named = head.values(of: "upgrade").flatMap(Self.elements)
        guard let upgraded = named.first else { return .broken("a 101 without Upgrade") }
        guard named.count == 1 else { return .broken("a 101 naming more than one protocol in Upgrade") }
        let name = Self.name(of: upgraded)
        guard self.protocols.contains(where: { Self.name(of: $0) == name }) else {
            return .broken("a 101 to a protocol the request did not offer")
        }
        if name == "websocket" {
            guard let key = self.webSocketKey,
                head.values(of: "sec-websocket-accept") == [Self.webSocketAccept(forKey: key)]
            else {
                return .broken("a 101 whose Sec-WebSocket-Accept does not answer the key sent (RFC 6455 §4.2.2)")
            }
        }
        return .splice(upgraded)
    }

    /// base64(SHA-1(key + GUID)), the `Sec-WebSocket-Accept` that answers `key` (RFC 6455 §4.2.2).
    package static func webSocketAccept(forKey key: String) -> String {
        Data(Insecure.SHA1.hash(data: Array((key + Self.webSocketGUID).utf8))).base64EncodedString()
    }

    // MARK: Lists

    /// The non-empty elements of a comma-separated list, whitespace trimmed (RFC 9110 §5.6.1).
    static func elements(_ value: String) -> [String] {
        value.split(separator: ",").compactMap { element in
            let trimmed = element.trimmingCharacters(in: CharacterSet(charactersIn: " \t"))
            return trimmed.isEmpty ? nil : trimmed
        }
    }

    /// A protocol's name, lower case, without its `/version`.
    static func name(of element: String) -> String {
        String(element.prefix { $0 != "/" }).lowercased()
    }

    /// `token [ "/" token ]` (RFC 9110 §7.8), at most 64 bytes.
    static func isProtocol(_ element: String) -> Bool {
        let parts = element.utf8.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false)
        return element.utf8.count <= 64 && (1...2).contains(parts.count)
            && parts.allSatisfy { !$0.isEmpty && $0.allSatisfy(HeaderName.isTokenByte) }
    }
}
