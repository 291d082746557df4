import BearerdProxy
import BearerdSockets

extension ProxySettings {
    /// The proxy's settings from a validated configuration: its sections, the listeners and who
    /// may call.
    /// - Throws: ``ProxyError`` when the TLS configuration cannot be built (for example an
    ///   unreadable CA file).
    package init(configuration: BearerdConfiguration) throws {
        try self.init(
            proxy: configuration.proxy,
            upstream: configuration.upstream,
            listeners: ListenerOptions(
                listen: configuration.listen,
                allowRemote: configuration.allowRemote,
                socketMode: configuration.socketMode,
                socketGroup: configuration.socketGroup,
                shutdownGrace: configuration.shutdownGrace
            ),
            callers: CallerAdmission(
                uids: configuration.socketAllowUIDs,
                gids: configuration.socketAllowGIDs,
                anyUser: configuration.socketAllowAnyUser
            ),
            accessLog: configuration.log.access,
            accessLogQuery: configuration.log.accessQuery
        )
    }
}
