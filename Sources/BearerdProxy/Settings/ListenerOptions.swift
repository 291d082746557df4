/// Where the proxy listens and how it leaves: `listen`, `allow_remote`, `socket_mode`,
/// `socket_group` and `shutdown_grace`, as configured.
package struct ListenerOptions: Sendable {
    /// Where to accept connections.
    package var listen: [ListenAddress]
    /// Whether a TCP address other than loopback may be listened on.
    package var allowRemote: Bool
    /// The mode of unix socket files.
    package var socketMode: UInt32
    /// The group of unix socket files; `nil`: the daemon's.
    package var socketGroup: UInt32?
    /// How long open connections may finish at shutdown.
    package var shutdownGrace: Duration

    package init(
        listen: [ListenAddress],
        allowRemote: Bool,
        socketMode: UInt32,
        socketGroup: UInt32?,
        shutdownGrace: Duration
    ) {
        self.listen = listen
        self.allowRemote = allowRemote
        self.socketMode = socketMode
        self.socketGroup = socketGroup
        self.shutdownGrace = shutdownGrace
    }
}
