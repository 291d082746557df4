import BearerdFiles
import BearerdTokens

#if canImport(Glibc)
import Glibc
#endif

/// What `serve` would find wrong with the token store, found without changing anything: no
/// lock is taken, nothing is written, a damaged file is not moved aside (`check-config`).
package enum StoreCheck {
    /// What was found: errors stop `serve`; notes do not.
    package struct Findings: Sendable {
        package var errors: [String] = []
        package var notes: [String] = []

        package init() {}
    }

    /// - Parameter createdByService: the path is the system unit's default
    ///   (/var/lib/bearerd/tokens.store, outside the unit): its directory not existing yet is a
    ///   note, since the unit's `StateDirectory=` makes it at the first start.
    package static func findings(
        path: String,
        key: StoreKey,
        profile: String,
        createdByService: Bool = false
    ) -> Findings {
        var findings = Findings()
        do throws(StoreError) {
            var material = try key.material()
            StoreCipher.wipe(&material)
        } catch {
            findings.errors.append("\(Self.keyName(key)): \(error)")
            return findings
        }
        let contents: (bytes: [UInt8], mode: mode_t)?
        do throws(FileCheckError) {
            contents = try CheckedDirectory.read(file: path, limit: EncryptedTokenStore.maxFileSize)
        } catch .system(_, let directory, ENOENT) where createdByService {
            findings.notes.append(
                "store.path: \(directory) does not exist yet: bearerd.service makes it at its first start (StateDirectory=); a bearerd run by hand needs store.path in a folder of its own (a relative name is next to the config file)"
            )
            return findings
        } catch .system(_, let directory, ENOENT) {
            findings.errors.append(
                "store.path: the token store's directory \(directory) does not exist: create it (mode 0700), or set store.path to a file in a folder of yours (a relative name is next to the config file)"
            )
            return findings
        } catch {
            findings.errors.append("store.path: \(error)")
            return findings
        }
        guard let (bytes, mode) = contents else {
            findings.notes.append("store.path: \(path) does not exist yet; `bearerd login` creates it")
            return findings
        }
        if mode & 0o077 != 0 {
            findings.errors.append(
                "store.path: \(path) has mode 0\(String(mode & 0o777, radix: 8)), so other users may read it: run chmod 600 \(path)"
            )
        }
        do throws(StoreError) {
            _ = try StoreFile.read(bytes, profile: profile) { format throws(StoreError) in
                try key.key(for: format, storePath: path)
            }
        } catch  where error.code == .wrongKey {
            findings.errors.append("\(Self.keyName(key)): \(StoreError.wrongKey(path))")
        } catch  where error.code == .otherProfile {
            findings.errors.append("\(StoreError.otherProfile(path, found: error.detail ?? "", configured: profile))")
        } catch  where error.code == .corrupted {
            findings.notes.append(
                "store.path: \(path) is damaged (\(error.detail ?? "unreadable")); serve will move it aside and start logged out"
            )
        } catch {
            findings.errors.append("\(Self.keyName(key)): \(error)")
        }
        return findings
    }

    private static func keyName(_ key: StoreKey) -> String {
        switch key {
        case .keyFile: "store.key_file"
        case .passphraseFile: "store.passphrase_file"
        }
    }
}
