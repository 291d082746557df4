import NIOCore

/// Tells a client connection that a reload replaced its settings. One with nothing sent upstream
/// under the old settings (idle, a head arriving, a request waiting for its token or connection)
/// is handed over to the new settings (`successor` makes its handler: that request and the next
/// meet the new config, and the client sees nothing); a busy one closes after the exchange in
/// flight. Only when no successor can be made (the caller could not be named now) does a request
/// not yet forwarded get a 503 to send again.
struct ProxyRetireEvent: Sendable {
    /// Whether the new lists admit the caller for sure (otherwise it could not be named now).
    let admitted: Bool
    /// The handler that serves the connection under the new settings, on its event loop; it
    /// keeps the caller `existing` names (its program as read at the accept), when there is one.
    let successor: @Sendable (_ viaTCP: Bool, _ existing: ConnectionCaller?, _ loop: any EventLoop) -> ProxyHandler?
}
