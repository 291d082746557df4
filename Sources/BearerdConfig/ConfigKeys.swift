/// The descriptors of every config key, a namespace per section (`ConfigKeys.Proxy.bodyTimeout`).
/// Each section's `section` lays its keys out as the example config shows them.
package enum ConfigKeys {
    /// The keys at the top level of the file.
    package enum General {
        static let listen = ConfigKeyDescriptor.list(
            "listen",
            "addresses: 127.0.0.1:PORT, [::1]:PORT, localhost:PORT or unix:/ABSOLUTE/PATH",
            default: ["127.0.0.1:8080"],
            reload: .applies,
            doc: """
                Where to accept connections: 127.0.0.1:PORT, [::1]:PORT, localhost:PORT or unix:/ABSOLUTE/PATH.
                Whoever can connect acts with your token, so only loopback and unix sockets are allowed.
                """
        )
        static let allowRemote = ConfigKeyDescriptor.bool(
            "allow_remote",
            default: false,
            reload: .applies,
            doc: """
                Allow non-loopback TCP addresses in `listen` (e.g. 0.0.0.0:8080). Anyone who can reach such an
                address can use the token; leave this false unless a firewall or network namespace stands guard.
                """
        )
        static let allowInsecureHTTP = ConfigKeyDescriptor.bool(
            "allow_insecure_http",
            default: false,
            reload: .applies,
            doc: """
                Plain http:// for upstream.url and the token URLs (and the endpoints discovery finds) is
                allowed only to this machine (127.0.0.0/8, ::1, localhost): to another host it would carry
                the token, the client secret and the refresh token readable on the network. Set this to allow
                it anyway; bearerd then warns at every start. An https issuer's metadata may never point at
                http, whatever this says.
                """
        )
        static let socketMode = ConfigKeyDescriptor.text(
            "socket_mode",
            "an octal file mode like 0660",
            default: "0600",
            reload: .applies,
            doc: """
                Mode (octal) and group (name or gid) of unix sockets. Applied before the socket appears under its
                name, so there is never a moment with a wider mode. 0600: only bearerd's own user may connect;
                use 0660 with a socket_group to share it with a group.
                """
        )
        static let socketGroup = ConfigKeyDescriptor.text(
            "socket_group",
            "a group name or gid",
            default: "",
            reload: .applies,
            doc: ""
        )
        static let socketAllowUIDs = ConfigKeyDescriptor.list(
            "socket_allow_uids",
            "user names or uids",
            reload: .applies,
            doc: """
                Users and groups (names or numbers) allowed to use the listeners in `listen`, unix sockets and
                TCP ports alike. On a unix socket the caller's uid and primary gid come from the kernel
                (SO_PEERCRED); on TCP, the uid that owns the client's socket (the kernel's socket table, as
                `ss -te` shows it; asked once per connection) and that account's groups. A caller in neither
                list, or a TCP client whose socket is not on this host, is closed before a byte is read,
                counted in bearerd_callers_refused_total and logged (the first of each uid at warning, then a
                summary line per burst). Both empty (the default): only bearerd's own uid and root. To let
                other users act with the token, list them (or a group, such as the Debian package's
                `bearerd` group), or set socket_allow_any_user. The access log names each caller
                (caller_uid; caller_pid and caller_exe on a unix socket).
                """
        )
        static let socketAllowAnyUser = ConfigKeyDescriptor.bool(
            "socket_allow_any_user",
            default: false,
            reload: .applies,
            doc: """
                Serve every caller who can reach a listener, without asking who it is: on a machine with
                other users (a shared build host, a jump host), each of them then acts with this identity's
                token. Only for a single-user machine or a listener no one else can reach; required with
                allow_remote, whose callers on other hosts the kernel cannot name.
                """
        )
        static let socketAllowGIDs = ConfigKeyDescriptor.list(
            "socket_allow_gids",
            "group names or gids",
            reload: .applies,
            doc: ""
        )
        static let threads = ConfigKeyDescriptor(
            "threads",
            .count(0...1024),
            default: "0",
            reload: .restart,
            doc: "Event-loop threads; 0 means one per CPU core."
        )
        static let shutdownGrace = ConfigKeyDescriptor.duration(
            "shutdown_grace",
            default: "30s",
            within: .zero...(.seconds(3600)),
            reload: .restart,
            doc: """
                After SIGTERM or SIGINT, bearerd stops accepting connections and lets in-flight requests finish
                for up to this long, then closes what is left and exits 0.
                """
        )

        static let section = ConfigSection(
            "",
            [
                .key(listen), .key(allowRemote), .key(allowInsecureHTTP), .key(socketMode), .key(socketGroup),
                .key(socketAllowUIDs), .key(socketAllowGIDs), .key(socketAllowAnyUser), .key(threads),
                .key(shutdownGrace), .key(Callers.perCaller),
            ]
        )
    }
}
