import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// The groups of a uid's account (its primary group and the group database's), for checking a
/// TCP caller against `socket_allow_gids`; kept a minute, since each lookup may read
/// `/etc/group` or ask NSS.
package final class AccountGroups: Sendable {
    package static let shared = AccountGroups()

    private let cache = Mutex<[UInt32: (groups: Set<UInt32>, at: ContinuousClock.Instant)]>([:])
    static let keep: Duration = .seconds(60)
    static let most = 1024

    package func groups(of uid: UInt32) -> Set<UInt32> {
        let now = ContinuousClock.now
        if let cached = self.cache.withLock({ $0[uid] }), now - cached.at < Self.keep {
            return cached.groups
        }
        let groups = Self.lookUp(uid)
        self.cache.withLock { cache in
            if cache.count >= Self.most { cache.removeAll() }
            cache[uid] = (groups, now)
        }
        return groups
    }

    private static func lookUp(_ uid: UInt32) -> Set<UInt32> {
        var entry = passwd()
        var result: UnsafeMutablePointer<passwd>?
        var buffer = [CChar](repeating: 0, count: 16 << 10)
        guard getpwuid_r(uid, &entry, &buffer, buffer.count, &result) == 0, result != nil, let name = entry.pw_name
        else { return [] }
        var count: Int32 = 64
        var list = [gid_t](repeating: 0, count: Int(count))
        if getgrouplist(name, entry.pw_gid, &list, &count) < 0 {
            list = [gid_t](repeating: 0, count: Int(min(count, 65_536)))
            guard getgrouplist(name, entry.pw_gid, &list, &count) >= 0 else { return [entry.pw_gid] }
        }
        return Set(list.prefix(Int(count))).union([entry.pw_gid])
    }
}
