import Foundation

/// The upgrade a request offers the upstream (RFC 9110 §7.8, `proxy.allow_upgrades`), and
/// whether the upstream's 101 takes it up. A value and two rules, apart from the channel:
/// ``decide(_:allowed:)`` says what of the client's `Upgrade` goes upstream, or that the request
/// is refused; ``answer(to:)`` says whether a 101 switched to what was offered, so that the two
/// connections are spliced, or is a broken answer that closes both. The request's rule, which
/// reads the settings and hashes the WebSocket key, is BearerdProxy's (`UpgradeOffer+Request`);
/// the 101's reads bytes only, so that the response fuzzer judges a 101 with it.
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
    package let webSocketKey: String?
    /// The `Sec-WebSocket-Accept` that answers ``webSocketKey``: base64(SHA-1(key + GUID)).
    package let webSocketAccept: String?

    /// An offer whose key's answer is already known (BearerdProxy's `init(protocols:webSocketKey:)`
    /// computes it; the fuzzer takes RFC 6455's example pair).
    package init(protocols: [String], webSocketKey: String?, webSocketAccept: String?) {
        self.protocols = protocols
        self.webSocketKey = webSocketKey
        self.webSocketAccept = webSocketAccept
    }

    /// What the upstream's 101 means.
    package enum Answer: Equatable, Sendable {
        /// It switched to this offered protocol (as the upstream named it): splice.
        case splice(String)
        /// It is no switch to what was offered: the client gets 502 and both connections close.
        /// Why, for the client's answer and the log (never a value the upstream sent).
        case broken(String)
    }

    /// Whether `websocket` is among the offered protocols.
    package var offersWebSocket: Bool {
        self.protocols.contains { Self.name(of: $0) == "websocket" }
    }

    /// The `Upgrade` value sent upstream.
    package var headerValue: String { self.protocols.joined(separator: ", ") }

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
            guard let accept = self.webSocketAccept, head.values(of: "sec-websocket-accept") == [accept] else {
                return .broken("a 101 whose Sec-WebSocket-Accept does not answer the key sent (RFC 6455 §4.2.2)")
            }
        }
        return .splice(upgraded)
    }

    // MARK: Lists

    /// The non-empty elements of a comma-separated list, whitespace trimmed (RFC 9110 §5.6.1).
    package static func elements(_ value: String) -> [String] {
        value.split(separator: ",").compactMap { element in
            let trimmed = element.trimmingCharacters(in: CharacterSet(charactersIn: " \t"))
            return trimmed.isEmpty ? nil : trimmed
        }
    }

    /// A protocol's name, lower case, without its `/version`.
    package static func name(of element: String) -> String {
        String(element.prefix { $0 != "/" }).lowercased()
    }

    /// `token [ "/" token ]` (RFC 9110 §7.8), at most 64 bytes.
    package static func isProtocol(_ element: String) -> Bool {
        let parts = element.utf8.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false)
        return element.utf8.count <= 64 && (1...2).contains(parts.count)
            && parts.allSatisfy { !$0.isEmpty && $0.allSatisfy(HeaderName.isTokenByte) }
    }
}
