import BearerdTestSupport
import Foundation
import Testing

@testable import BearerdCLI

#if canImport(Glibc)
import Glibc
#endif

/// `--user`'s paths: XDG variables with their defaults, and a state directory that is the
/// user's own before the store goes in it.
@Suite("The user session's directories")
struct UserSessionTests {
    @Test func xdgVariablesAndTheirDefaults() {
        let set = UserSession(
            environment: ["XDG_CONFIG_HOME": "/c", "XDG_RUNTIME_DIR": "/r", "XDG_STATE_HOME": "/s"],
            home: "/home/u",
            uid: 1000
        )
        #expect(set.configPath == "/c/bearerd/bearerd.yaml")
        #expect(set.runtimeDirectory == "/r/bearerd")
        #expect(set.stateDirectory == "/s/bearerd")
        // Unset, or relative (which the XDG specification says to ignore): the defaults.
        let unset = UserSession(environment: ["XDG_STATE_HOME": "relative"], home: "/home/u", uid: 1000)
        #expect(unset.configPath == "/home/u/.config/bearerd/bearerd.yaml")
        #expect(unset.runtimeDirectory == "/run/user/1000/bearerd")
        #expect(unset.stateDirectory == "/home/u/.local/state/bearerd")
        // Inside the unit, its RuntimeDirectory= wins; the state directory is always bearerd's own.
        let inside = set.environment(["RUNTIME_DIRECTORY": "/run/user/1000/bearerd", "STATE_DIRECTORY": "/x"])
        #expect(inside["RUNTIME_DIRECTORY"] == "/run/user/1000/bearerd")
        #expect(inside["STATE_DIRECTORY"] == "/s/bearerd")
    }

    @Test func theStateDirectoryIsMadeNarrowedOrRefused() throws {
        let directory = try TemporaryDirectory()
        let session = UserSession(environment: ["XDG_STATE_HOME": directory.path + "/state"], home: "/nowhere")
        func mode() throws -> Int? {
            try FileManager.default.attributesOfItem(atPath: session.stateDirectory)[.posixPermissions] as? Int
        }
        // Missing: made, mode 0700.
        #expect(session.prepareStateDirectory() == nil)
        #expect(try mode() == 0o700)
        // Open to others: narrowed.
        try FileManager.default.setAttributes([.posixPermissions: 0o777], ofItemAtPath: session.stateDirectory)
        #expect(session.prepareStateDirectory() == nil)
        #expect(try mode() == 0o700)
        // Someone else's: refused, with what to do.
        let foreign = try #require(session.prepareStateDirectory(uid: getuid() + 4242))
        #expect(foreign.contains("not to you"))
        // A link planted where the directory goes: refused, not followed.
        let linked = UserSession(environment: ["XDG_STATE_HOME": directory.path + "/linked"], home: "/nowhere")
        for name in ["linked", "elsewhere"] {
            let path = directory.path + "/" + name
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        }
        try FileManager.default.createSymbolicLink(
            atPath: linked.stateDirectory,
            withDestinationPath: directory.path + "/elsewhere"
        )
        let link = try #require(linked.prepareStateDirectory())
        #expect(link.contains("not a directory"))
    }
}
