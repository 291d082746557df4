/// A request's method (RFC 9110 §9) as its request line names it: after a parse, one of the
/// methods llhttp knows (``init(known:)``), since bearerd forwards no other. The common ones are
/// cases of their own, so copying, comparing and switching on them touches no string and no
/// reference count (a struct around the name cost 5 releases per request, counted with uprobes);
/// the others carry their name.
package enum RequestMethod: Hashable, Sendable, CustomStringConvertible {
    case GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS, CONNECT, TRACE
    /// Any other name (never one of the cases above: ``init(rawValue:)`` makes those).
    case other(String)

    /// The method called `rawValue`, as sent (case-sensitive, RFC 9110 §9.1).
    package init(rawValue: String) {
        switch rawValue {
        case "GET": self = .GET
        case "HEAD": self = .HEAD
        case "POST": self = .POST
        case "PUT": self = .PUT
        case "PATCH": self = .PATCH
        case "DELETE": self = .DELETE
        case "OPTIONS": self = .OPTIONS
        case "CONNECT": self = .CONNECT
        case "TRACE": self = .TRACE
        default: self = .other(rawValue)
        }
    }

    /// The name, as sent (`GET`).
    package var rawValue: String {
        switch self {
        case .GET: "GET"
        case .HEAD: "HEAD"
        case .POST: "POST"
        case .PUT: "PUT"
        case .PATCH: "PATCH"
        case .DELETE: "DELETE"
        case .OPTIONS: "OPTIONS"
        case .CONNECT: "CONNECT"
        case .TRACE: "TRACE"
        case .other(let name): name
        }
    }

    package var description: String { self.rawValue }

    /// RFC 9110 §9.2.2: repeating the request has the effect of sending it once.
    package var isIdempotent: Bool {
        switch self {
        case .GET, .HEAD, .OPTIONS, .TRACE, .PUT, .DELETE: true
        case .POST, .PATCH, .CONNECT, .other: false
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
