#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Checks that a file holding a secret exists, is a regular file and is not readable by others.
package enum SecretFileCheck {
    /// What is wrong with the secret file at `path`, or `nil` if it is fine.
    /// `groupMayRead`: a platform's token file (a Kubernetes projected token with `fsGroup` is
    /// mode 0640) may be readable by its group; never by others, never writable but by its owner.
    package static func problem(path: String, groupMayRead: Bool = false) -> String? {
        var info = stat()
        guard stat(path, &info) == 0 else {
            return "cannot find \(path): create it (mode 0600) or fix the path"
        }
        guard (info.st_mode & S_IFMT) == S_IFREG else {
            return "\(path) is \(FileCheckError.kindName(info.st_mode & S_IFMT)), not a regular file: remove it"
        }
        guard access(path, R_OK) == 0 else { return "cannot read \(path): check its owner and mode" }
        if info.st_mode & (groupMayRead ? 0o037 : 0o077) != 0 {
            let mode = String(info.st_mode & 0o777, radix: 8)
            if groupMayRead {
                return "\(path) has mode 0\(mode), so other users may read the token: make it 0600 or 0640 "
                    + "(on Kubernetes, give the projected volume defaultMode: 0440 and the pod an fsGroup)"
            }
            return "\(path) has mode 0\(mode), so other users may read the secret: run chmod 600 \(path)"
        }
        return nil
    }
}
