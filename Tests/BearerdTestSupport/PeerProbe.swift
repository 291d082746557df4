import Foundation

/// Connects to a unix socket as another user, to test `SO_PEERCRED` checks.
package enum PeerProbe {
    /// How many bytes a `GET /v1/status` on the unix socket `socket` gets back when sent by a
    /// process running as `uid` (the caller must be root to take another uid); "0" when the
    /// connection is closed unanswered.
    package static func answerBytes(to socket: String, asUID uid: Int) throws -> String {
        let script = """
            import os, socket
            os.setgid(\(uid)); os.setuid(\(uid))
            s = socket.socket(socket.AF_UNIX)
            s.settimeout(5)
            s.connect("\(socket)")
            try:
                s.sendall(b"GET /v1/status HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n")
                print(len(s.recv(4096)))
            except (BrokenPipeError, ConnectionResetError):
                print(0)
            """
        let process = Process()
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
