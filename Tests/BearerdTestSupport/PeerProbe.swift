import Foundation

/// Connects to a unix socket or a loopback TCP port as another user, to test the checks of
/// `socket_allow_uids` (`SO_PEERCRED`, and the owner of a TCP client's socket).
package enum PeerProbe {
    /// How many bytes a `GET /v1/status` on the unix socket `socket` gets back when sent by a
    /// process running as `uid` (the caller must be root to take another uid); "0" when the
    /// connection is closed unanswered.
    package static func answerBytes(to socket: String, asUID uid: Int) throws -> String {
        try Self.run(uid: uid, family: "socket.AF_UNIX", address: "\"\(socket)\"", request: "GET /v1/status", host: "x")
    }

    /// The same over TCP to `host`:`port` (a loopback address).
    package static func answerBytes(toHost host: String = "127.0.0.1", port: Int, asUID uid: Int) throws -> String {
        try Self.run(
            uid: uid,
            family: host.contains(":") ? "socket.AF_INET6" : "socket.AF_INET",
            address: "(\"\(host)\", \(port))",
            request: "GET /probe",
            host: host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
        )
    }

    private static func run(uid: Int, family: String, address: String, request: String, host: String) throws -> String {
        let script = """
            import os, socket
            os.setgid(\(uid)); os.setuid(\(uid))
            s = socket.socket(\(family))
            s.settimeout(5)
            s.connect(\(address))
            try:
                s.sendall(b"\(request) HTTP/1.1\\r\\nHost: \(host)\\r\\nConnection: close\\r\\n\\r\\n")
                print(len(s.recv(4096)))
            except (BrokenPipeError, ConnectionResetError, socket.timeout):
                print(0)
            """
        let process = ChildProcess()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", "-c", script]
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        process.waitUntilExit()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        return text.trimmingCharacters(in: .whitespacesAndNewlines)
    }
}
