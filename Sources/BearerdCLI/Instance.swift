import Foundation

/// One bearerd on this machine: `bearerd.service` with /etc/bearerd/bearerd.yaml, or an instance
/// `bearerd@NAME.service` of the template unit with /etc/bearerd/NAME.yaml, its own runtime and
/// state directories (/run/bearerd@NAME, /var/lib/bearerd@NAME) and its own store key.
struct Instance: Equatable, Sendable {
    static let directory = "/etc/bearerd"

    /// `nil` for the plain unit.
    var name: String?
    var directory: String = Self.directory

    var unit: String { self.name.map { "bearerd@\($0).service" } ?? "bearerd.service" }
    var configPath: String { self.directory + "/" + (self.name ?? "bearerd") + ".yaml" }

    /// What systemd gives the unit's process, for a CLI verb run outside it: the directories the
    /// template names, unless the environment has its own.
    func environment(_ base: [String: String]) -> [String: String] {
        guard let name = self.name else { return base }
        var environment = base
        if environment["RUNTIME_DIRECTORY"] == nil { environment["RUNTIME_DIRECTORY"] = "/run/bearerd@\(name)" }
        if environment["STATE_DIRECTORY"] == nil { environment["STATE_DIRECTORY"] = "/var/lib/bearerd@\(name)" }
        return environment
    }

    /// Why `name` cannot be an instance name (it becomes part of paths and a unit name).
    static func problem(_ name: String) -> String? {
        let allowed = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-")
        guard (1...64).contains(name.count), name.allSatisfy(allowed.contains) else {
            return "an instance name is 1 to 64 letters, digits, '-' or '_' (got \"\(name)\")"
        }
        return nil
    }

    /// The instances whose config is in `directory`: bearerd.yaml is the plain unit, NAME.yaml
    /// the instance NAME; other files are not configs of an instance.
    static func all(in directory: String = Self.directory) -> [Instance] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        return names.sorted().compactMap { file -> Instance? in
            guard file.hasSuffix(".yaml") else { return nil }
            let stem = String(file.dropLast(5))
            if stem == "bearerd" { return Instance(name: nil, directory: directory) }
            return Self.problem(stem) == nil ? Instance(name: stem, directory: directory) : nil
        }
    }
}
