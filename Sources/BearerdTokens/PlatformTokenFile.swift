import BearerdFiles
import Foundation

/// A token the platform writes to a file and renews (a Kubernetes projected service-account
/// token, a CI job's OIDC token, a SPIFFE JWT-SVID): the subject or actor token of a token
/// exchange, or a client assertion. Read again for every request, since the platform replaces it
/// on its own schedule; its value never leaves ``PlatformToken/value``.
package struct PlatformTokenFile: Sendable {
    /// The file, resolved.
    package let path: String
    /// The config key that names it, for messages.
    package let key: String

    /// The most a platform token file is read of: a JWT-SVID or a projected token is 1-2 KiB.
    static let limit = 64 << 10

    package init(path: String, key: String) {
        self.path = path
        self.key = key
    }

    /// The file's token as it is now, surrounding white space removed.
    /// - Throws: ``TokenEngineError`` code `source`: the file cannot be read, is empty, or holds
    ///   a JWT whose `exp` has passed (nothing is sent then; the message says when it expired).
    package func read(now: Date) throws(TokenEngineError) -> PlatformToken {
        let contents: (bytes: [UInt8], mode: mode_t)?
        do throws(FileCheckError) {
            contents = try CheckedDirectory.readFollowingOwnersLinks(file: self.path, limit: Self.limit)
        } catch {
            throw .source("cannot read \(self.key): \(error)")
        }
        guard let contents else {
            throw .source("\(self.key): \(self.path) does not exist; is the platform's token mounted there?")
        }
        // As check-config's rule (SecretFileCheck, groupMayRead): readable by the group at most,
        // writable by the owner alone.
        guard contents.mode & 0o037 == 0 else {
            throw .source(
                "\(self.key): \(self.path) has mode 0\(String(contents.mode & 0o777, radix: 8)), so other users may read the token: "
                    + "make it 0600 or 0640 (on Kubernetes, the projected volume's defaultMode: 0440 with fsGroup)"
            )
        }
        let text = String(decoding: contents.bytes, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        guard !text.isEmpty, !text.contains(where: { $0.isNewline || $0 == " " }) else {
            throw .source("\(self.key): \(self.path) must hold one token alone, on one line")
        }
        let token = PlatformToken(value: Secret(text))
        if let expiresAt = token.expiresAt, expiresAt <= now {
            throw .source(
                "\(self.key): the token in \(self.path) expired at \(ISO8601DateFormatter().string(from: expiresAt)); "
                    + "the platform has not renewed it yet (bearerd tries again when the file changes)"
            )
        }
        return token
    }

    /// What the file holds now, to notice that the platform renewed it; `nil` when it cannot be
    /// read. Never a token: a hash, compared within this process only.
    package func fingerprint() -> Int? {
        // `try?` flattens "cannot read" and "no such file" into one nil.
        guard let contents = try? CheckedDirectory.readFollowingOwnersLinks(file: self.path, limit: Self.limit) else {
            return nil
        }
        var hasher = Hasher()
        hasher.combine(contents.bytes)
        return hasher.finalize()
    }
}

/// A platform's token as read from its file.
package struct PlatformToken: Sendable {
    package let value: Secret

    /// Its `exp`, when it is a JWT that has one; never checked for a signature (bearerd is not
    /// its audience).
    package var expiresAt: Date? {
        // An exp past the year 9999 is not a time: taken as none.
        guard let exp = JWTClaims.expiry(of: self.value.value), exp < 253_402_300_800 else { return nil }
        return Date(timeIntervalSince1970: exp)
    }

    /// Its `sub`, for `status`.
    package var subject: String? { JWTClaims.subject(of: self.value.value) }
}
