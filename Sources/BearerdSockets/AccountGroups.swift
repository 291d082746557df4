import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// The groups of a uid's account (its primary group and the group database's), for checking a
/// TCP caller against `socket_allow_gids`. Looking one up may read `/etc/group` or ask NSS (LDAP,
/// SSSD), which may take long: ``lookUp(_:)`` is for a thread of its own, and the event loop
/// asks only ``cached(_:)``. Kept a minute, at most ``most`` accounts (the oldest go first).
package final class AccountGroups: Sendable {
    package static let shared = AccountGroups()

    private let cache = Mutex<[UInt32: (groups: Set<UInt32>, at: ContinuousClock.Instant)]>([:])
    static let keep: Duration = .seconds(60)
    static let most = 1024

    /// The groups found for `uid` within the last minute, or `nil`.
    package func cached(_ uid: UInt32) -> Set<UInt32>? {
        let now = ContinuousClock.now
        guard let entry = self.cache.withLock({ $0[uid] }), now - entry.at < Self.keep else { return nil }
        return entry.groups
    }

    /// Looks `uid`'s groups up (blocking) and keeps them.
    @discardableResult
    package func lookUp(_ uid: UInt32) -> Set<UInt32> {
        let groups = Self.groups(of: uid)
        let now = ContinuousClock.now
        self.cache.withLock { cache in
            if cache.count >= Self.most, let oldest = cache.min(by: { $0.value.at < $1.value.at })?.key {
                cache[oldest] = nil
            }
            cache[uid] = (groups, now)
        }
        return groups
    }

    private static func groups(of uid: UInt32) -> Set<UInt32> {
        var entry = passwd()
        var result: UnsafeMutablePointer<passwd>?
        var buffer = [CChar](repeating: 0, count: 16 << 10)
        // `pw_name` points into `buffer`: both calls happen while it is held.
        return buffer.withUnsafeMutableBufferPointer { storage -> Set<UInt32> in
            guard let base = storage.baseAddress, getpwuid_r(uid, &entry, base, storage.count, &result) == 0,
                result != nil,
                let name = entry.pw_name
            else { return [] }
            var count: Int32 = 64
            var list = [gid_t](repeating: 0, count: Int(count))
            if getgrouplist(name, entry.pw_gid, &list, &count) < 0 {
                list = [gid_t](repeating: 0, count: Int(min(max(count, 0), 65_536)))
                guard getgrouplist(name, entry.pw_gid, &list, &count) >= 0 else { return [entry.pw_gid] }
            }
            return Set(list.prefix(Int(max(count, 0)))).union([entry.pw_gid])
        }
    }
}
