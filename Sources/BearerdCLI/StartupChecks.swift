import BearerdConfig
import BearerdFiles
import BearerdFleet
import BearerdProxy
import BearerdSockets
import BearerdStore
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// What `serve` checks after the config loads and before it binds, run by `check-config` too
/// without changing anything, so that OK means `serve` will start.
enum StartupChecks {
    /// Problems that would stop `serve`, and notes that would not.
    static func run(_ configuration: BearerdConfiguration) -> StoreCheck.Findings {
        var findings = StoreCheck.Findings()
        let store = configuration.store
        if let postgres = store.postgres {
            // The fleet's row is checked when it is read: its key, by every host.
            if let problem = PostgresSessionStore.check(postgres) { findings.errors.append(problem) }
            findings.notes.append(
                "store: the session is the fleet's row \"\(store.profile)\" in the PostgreSQL table \(postgres.table), shared with every host of this profile"
            )
        } else if let file = store.keyFile ?? store.passphraseFile {
            let key: StoreKey = store.keyFile != nil ? .keyFile(file) : .passphraseFile(file)
            let found = StoreCheck.findings(
                path: store.path,
                key: key,
                profile: store.profile,
                createdByService: Self.isUnitsStateDirectory(store.path)
                    && ProcessInfo.processInfo.environment["STATE_DIRECTORY"] == nil
            )
            findings.errors += found.errors
            findings.notes += found.notes
        } else if configuration.auth.staticTokenFile == nil {
            findings.notes.append(
                "store: no store.key_file or store.passphrase_file, so tokens are kept in memory only and `bearerd login` must follow every restart"
            )
        }
        let platform = Self.platformTokenFindings(configuration.auth)
        findings.errors += platform.errors
        findings.notes += platform.notes
        if let problem = Self.clientCertificateProblem(configuration.auth.tlsClientCertificate) {
            findings.errors.append(problem)
        }
        let adminDirectory = CheckedDirectory.directoryName(of: configuration.admin.socket)
        if FileManager.default.fileExists(atPath: adminDirectory),
            let problem = SocketTrust(storePath: store.path).directoryProblem(adminDirectory)
        {
            findings.errors.append("admin.socket: \(problem)")
        } else if let problem = Self.socketDirectoryProblem(configuration.admin.socket, key: "admin.socket") {
            findings.errors.append(problem)
        }
        for case .unix(let path) in configuration.listen {
            if let problem = Self.socketDirectoryProblem(path, key: "listen") { findings.errors.append(problem) }
        }
        return findings
    }

    /// Whether `path` is the store a system unit keeps in its `StateDirectory=`, which systemd
    /// makes at the unit's first start: /var/lib/bearerd/tokens.store, or
    /// /var/lib/bearerd@NAME/tokens.store for an instance.
    static func isUnitsStateDirectory(_ path: String) -> Bool {
        guard path.hasSuffix("/tokens.store") else { return false }
        let directory = CheckedDirectory.directoryName(of: path)
        if directory == "/var/lib/bearerd" { return true }
        guard directory.hasPrefix("/var/lib/bearerd@") else { return false }
        return Instance.problem(String(directory.dropFirst("/var/lib/bearerd@".count))) == nil
    }

    /// Whether bearerd could create a socket at `path`: a directory it can make or write, that
    /// not every user may empty, and nothing but a socket already at the path.
    static func socketDirectoryProblem(_ path: String, key: String) -> String? {
        if let problem = UnixSocketFile.placementProblem(path, key: key) { return problem }
        var directory = CheckedDirectory.directoryName(of: path)
        // FileManager rather than stat(2): with Foundation in this module, a release build takes
        // `struct stat` for CoreFoundation's and refuses it (MemberImportVisibility).
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: directory, isDirectory: &isDirectory) else {
            // serve creates it (mode 0700): the nearest existing parent must be writable.
            while !FileManager.default.fileExists(atPath: directory), directory != "/" {
                directory = CheckedDirectory.directoryName(of: directory)
            }
            return access(directory, W_OK) == 0
                ? nil : "\(key): cannot create the directory of \(path): \(directory) is not writable"
        }
        guard isDirectory.boolValue else { return "\(key): \(directory) is not a directory" }
        return access(directory, W_OK | X_OK) == 0 ? nil : "\(key): cannot create \(path): \(directory) is not writable"
    }
}
