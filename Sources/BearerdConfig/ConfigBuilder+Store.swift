import Foundation

#if canImport(Glibc)
import Glibc
#endif

extension ConfigBuilder {
    mutating func store() -> BearerdConfiguration.Store {
        let stateDirectory = self.environment["STATE_DIRECTORY"].flatMap { $0.isEmpty ? nil : $0 }
        let defaultPath = (stateDirectory ?? "/var/lib/bearerd") + "/tokens.store"
        var path = defaultPath
        if let raw = self.string("store.path") {
            path = raw.hasPrefix("/") ? raw : (stateDirectory ?? self.baseDirectory) + "/" + raw
        }
        let keyFile = self.string("store.key_file").map(self.resolve)
        let passphraseFile = self.string("store.passphrase_file").map(self.resolve)
        if keyFile != nil && passphraseFile != nil {
            self.issue("store.passphrase_file", "set store.key_file or store.passphrase_file, not both")
        }
        for (key, file) in [("store.key_file", keyFile), ("store.passphrase_file", passphraseFile)] {
            guard let file else { continue }
            var info = stat()
            if stat(file, &info) != 0 {
                self.issue(key, "cannot find \(file): create a key with `bearerd keygen --out \(file)`")
            } else if info.st_mode & 0o077 != 0 {
                self.issue(
                    key,
                    "\(file) has mode 0\(String(info.st_mode & 0o777, radix: 8)), so other users may read it: run chmod 400 \(file)"
                )
            }
        }
        let profile = self.string(ConfigKeys.Store.profile) ?? ""
        if profile.utf8.count > 64 || profile.contains(where: { $0.isNewline }) {
            self.issue("store.profile", "must be a short name on one line (got \"\(profile)\")")
        }
        var postgres: BearerdConfiguration.Store.Postgres?
        switch self.choice(ConfigKeys.Store.backend) {
        case "postgres":
            if keyFile == nil && passphraseFile == nil {
                self.issue(
                    "store.backend",
                    "postgres keeps the same sealed tokens as the file store: set store.key_file (the same key on every host of the fleet)"
                )
            }
            postgres = self.postgres()
        default:
            // file, or a word choice() has reported.
            break
        }
        return BearerdConfiguration.Store(
            path: path,
            keyFile: keyFile,
            passphraseFile: passphraseFile,
            profile: profile,
            postgres: postgres
        )
    }

    /// `store.postgres.*`, checked as far as a config can be: the URL file is read when the store
    /// opens (it holds a password), but it must exist and be private now.
    private mutating func postgres() -> BearerdConfiguration.Store.Postgres {
        let urlFile = self.string("store.postgres.url_file").map(self.resolve)
        if urlFile == nil {
            self.issue(
                "store.postgres.url_file",
                "is required with store.backend: postgres: a file holding postgres://USER:PASSWORD@HOST:PORT/DATABASE"
            )
        }
        if let file = urlFile {
            var info = stat()
            if stat(file, &info) != 0 {
                self.issue("store.postgres.url_file", "cannot find \(file)")
            } else if info.st_mode & 0o077 != 0 {
                self.issue(
                    "store.postgres.url_file",
                    "\(file) has mode 0\(String(info.st_mode & 0o777, radix: 8)), so other users may read the database password: run chmod 400 \(file)"
                )
            }
        }
        let tls = self.choice(ConfigKeys.Store.Postgres.sslmode).flatMap(
            BearerdConfiguration.Store.Postgres.TLSMode.init(rawValue:)
        )
        let caFile = self.string("store.postgres.ca_file").map(self.resolve)
        if let caFile, access(caFile, R_OK) != 0 { self.issue("store.postgres.ca_file", "cannot read \(caFile)") }
        let table = self.string(ConfigKeys.Store.Postgres.table) ?? ""
        if !BearerdConfiguration.Store.Postgres.isValidTable(table) {
            self.issue(
                "store.postgres.table",
                "must be a plain table name (lowercase letters, digits and _, optionally schema.table; got \"\(table)\")"
            )
        }
        var hostName = self.string("store.postgres.host_name") ?? ProcessInfo.processInfo.hostName
        if hostName.utf8.count > 255 || hostName.contains(where: { $0.isNewline || $0.isWhitespace }) {
            self.issue("store.postgres.host_name", "must be a short name without spaces (got \"\(hostName)\")")
            hostName = "invalid"
        }
        return BearerdConfiguration.Store.Postgres(
            urlFile: urlFile ?? "",
            tls: tls,
            caFile: caFile,
            table: table,
            hostName: hostName,
            lockTimeout: self.duration(ConfigKeys.Store.Postgres.lockTimeout),
            pollInterval: self.duration(ConfigKeys.Store.Postgres.pollInterval),
            connectTimeout: self.duration(ConfigKeys.Store.Postgres.connectTimeout)
        )
    }

    /// `admin.socket`: by default in systemd's `RuntimeDirectory=`, else /run/bearerd; a relative
    /// path is taken from there too.
    mutating func admin() -> BearerdConfiguration.Admin {
        let runtimeDirectory = self.environment["RUNTIME_DIRECTORY"].flatMap { $0.isEmpty ? nil : $0 }
        let base = runtimeDirectory ?? "/run/bearerd"
        var socket = base + "/admin.sock"
        if let raw = self.string("admin.socket") {
            socket = raw.hasPrefix("/") ? raw : (runtimeDirectory ?? self.baseDirectory) + "/" + raw
        }
        // sun_path holds 108 bytes with its terminating NUL.
        if socket.utf8.count > 107 {
            self.issue("admin.socket", "\(socket) is longer than a unix socket path may be (107 bytes)")
        }
        var metrics: ListenAddress?
        if let text = self.string("metrics.listen") {
            switch ListenAddress.parse(text) {
            case .failure(let message):
                self.issue("metrics.listen", message.text)
            case .success(.unix):
                self.issue(
                    "metrics.listen",
                    "must be a TCP address like 127.0.0.1:9464 (the admin socket serves /metrics too)"
                )
            case .success(let address):
                if !address.isLoopback && !self.bool(ConfigKeys.General.allowRemote) {
                    self.issue(
                        "metrics.listen",
                        "\(address) is not a loopback address; set allow_remote: true if metrics may be read from elsewhere"
                    )
                }
                metrics = address
            }
        }
        return BearerdConfiguration.Admin(socket: socket, metricsListen: metrics)
    }
}
