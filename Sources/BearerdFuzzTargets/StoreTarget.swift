import BearerdStore
import BearerdTokens

/// The store reader on a whole file (first byte even), with a fixed key, or on a decrypted
/// payload (odd). A payload that reads must read back the same after being written again.
///
/// A random file never authenticates, so the whole-file mode exercises the header parser (the
/// part read before anything is authenticated); the payload mode reaches the JSON behind it.
enum StoreTarget {
    static let key = [UInt8](repeating: 0x42, count: 32)

    static func run(_ bytes: [UInt8]) -> String {
        guard let mode = bytes.first else { return "empty" }
        let rest = Array(bytes.dropFirst())
        if mode & 1 == 0 {
            do {
                let tokens = try StoreFile.read(rest, profile: "default") { _ throws(StoreError) in Self.key }
                Self.roundTrips(tokens)
                return "read"
            } catch {
                switch error.code {
                case .corrupted: return "damaged"
                case .wrongKey: return "wrong key"
                case .otherProfile: return "other profile"
                default: fatalError("libcrypto failed: \(error)")
                }
            }
        }
        guard let tokens = StoreFile.decodePayload(rest) else { return "unreadable" }
        Self.roundTrips(tokens)
        return "decoded"
    }

    private static func roundTrips(_ tokens: StoredTokens) {
        guard let written = try? StoreFile.encodePayload(tokens) else {
            return promise(false, "tokens that were read can be written")
        }
        promise(StoreFile.decodePayload(written) == tokens, "tokens read back as they were written")
    }
}
