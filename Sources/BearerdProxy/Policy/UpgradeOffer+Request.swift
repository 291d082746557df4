import BearerdWire
import Crypto
import Foundation

/// The request's side of an upgrade: what of a client's `Upgrade` goes upstream under the
/// settings (``decide(_:allowed:)``), and the `Sec-WebSocket-Accept` its key asks for, which
/// takes SHA-1 (swift-crypto). The 101's side reads bytes only: ``UpgradeOffer/answer(to:)``.
extension UpgradeOffer {
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

    /// Protocols never offered, whatever the settings: over an HTTP/2 connection (h2c) the
    /// client would send many requests that no per-request check sees. The config refuses them
    /// too (`proxy.allow_upgrades`).
    package static let neverOffered = ProxyOptions.multiplexedUpgrades

    /// RFC 6455 §1.3: appended to the key before hashing.
    static let webSocketGUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

    /// An offer of `protocols`; with a `webSocketKey`, the answer a WebSocket 101 must carry.
    package init(protocols: [String], webSocketKey: String?) {
        self.init(
            protocols: protocols,
            webSocketKey: webSocketKey,
            webSocketAccept: webSocketKey.map(Self.webSocketAccept(forKey:))
        )
    }

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
        let offer = UpgradeOffer(protocols: protocols, webSocketKey: nil)
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
            return .offer(UpgradeOffer(protocols: protocols, webSocketKey: key))
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

    /// base64(SHA-1(key + GUID)), the `Sec-WebSocket-Accept` that answers `key` (RFC 6455 §4.2.2).
    package static func webSocketAccept(forKey key: String) -> String {
        Data(Insecure.SHA1.hash(data: Array((key + Self.webSocketGUID).utf8))).base64EncodedString()
    }
}
