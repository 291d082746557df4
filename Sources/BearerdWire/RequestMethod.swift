/// A request's method (RFC 9110 §9) as its request line names it: after a parse, one of the
/// methods llhttp knows (``init(known:)``), since bearerd forwards no other. The name is the
/// value: every known one fits in a small string (up to 15 UTF-8 bytes, held inline), so a
/// method costs no allocation, and the common ones are made from a literal, not from the head.
package struct RequestMethod: Hashable, Sendable, CustomStringConvertible {
    /// The name, as sent (`GET`).
    package let rawValue: String

    @inlinable
    package init(rawValue: String) {
        self.rawValue = rawValue
    }

    package var description: String { self.rawValue }

    @inlinable package static var GET: Self { Self(rawValue: "GET") }
    @inlinable package static var HEAD: Self { Self(rawValue: "HEAD") }
    @inlinable package static var POST: Self { Self(rawValue: "POST") }
    @inlinable package static var PUT: Self { Self(rawValue: "PUT") }
    @inlinable package static var PATCH: Self { Self(rawValue: "PATCH") }
    @inlinable package static var DELETE: Self { Self(rawValue: "DELETE") }
    @inlinable package static var OPTIONS: Self { Self(rawValue: "OPTIONS") }
    @inlinable package static var CONNECT: Self { Self(rawValue: "CONNECT") }
    @inlinable package static var TRACE: Self { Self(rawValue: "TRACE") }

    /// RFC 9110 §9.2.2: repeating the request has the effect of sending it once.
    package var isIdempotent: Bool {
        switch self {
        case .GET, .HEAD, .OPTIONS, .TRACE, .PUT, .DELETE: true
        default: false
        }
    }

    /// `name` when it is a method llhttp knows (the list of NIOHTTP1's `HTTPMethod`, which
    /// bearerd parsed requests with before), else `nil`.
    package init?(known name: String) {
        switch name {
        case "GET", "PUT", "ACL", "HEAD", "POST", "COPY", "LOCK", "MOVE", "BIND", "LINK", "PATCH", "TRACE", "MKCOL",
            "MERGE", "PURGE", "NOTIFY", "SEARCH", "UNLOCK", "REBIND", "UNBIND", "REPORT", "DELETE", "UNLINK",
            "CONNECT", "MSEARCH", "OPTIONS", "PROPFIND", "CHECKOUT", "PROPPATCH", "SUBSCRIBE", "MKCALENDAR",
            "MKACTIVITY", "UNSUBSCRIBE", "SOURCE":
            self.init(rawValue: name)
        default:
            return nil
        }
    }
}
