import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Asks the person at the terminal, on `/dev/tty` (standard input may be a pipe).
enum Terminal {
    /// The terminal's settings while echo is off, restored by the SIGINT handler.
    nonisolated(unsafe) private static var saved = termios()
    nonisolated(unsafe) private static var descriptor: Int32 = -1

    /// One line typed at the terminal; with `secret`, without echo (Ctrl-C restores the echo).
    static func ask(_ prompt: String, secret: Bool) throws(CommandError) -> String {
        let descriptor = open("/dev/tty", O_RDWR | O_CLOEXEC)
        guard descriptor >= 0 else {
            throw CommandError(
                "no terminal to ask for the \(secret ? "password" : "user name") on: pass \(secret ? "--password-stdin" : "--username")"
            )
        }
        defer { close(descriptor) }
        Self.write(prompt, to: descriptor)
        if secret {
            Self.descriptor = descriptor
            tcgetattr(descriptor, &Self.saved)
            var quiet = Self.saved
            quiet.c_lflag &= ~tcflag_t(ECHO)
            tcsetattr(descriptor, TCSAFLUSH, &quiet)
            signal(SIGINT) { _ in
                tcsetattr(Terminal.descriptor, TCSANOW, &Terminal.saved)
                _exit(130)
            }
        }
        defer {
            if secret {
                tcsetattr(descriptor, TCSAFLUSH, &Self.saved)
                signal(SIGINT, SIG_DFL)
                Self.write("\n", to: descriptor)
            }
        }
        var line: [UInt8] = []
        var byte: UInt8 = 0
        while read(descriptor, &byte, 1) == 1, byte != UInt8(ascii: "\n") {
            line.append(byte)
            if line.count > 4096 { break }
        }
        return String(decoding: line, as: UTF8.self).trimmingCharacters(in: CharacterSet(charactersIn: "\r"))
    }

    /// The first line of standard input, without its line end (`--password-stdin`).
    static func firstLineOfStandardInput(what: String) throws(CommandError) -> String {
        guard let line = readLine(strippingNewline: true), !line.isEmpty else {
            throw CommandError("standard input held no \(what)")
        }
        return line.trimmingCharacters(in: CharacterSet(charactersIn: "\r"))
    }

    private static func write(_ text: String, to descriptor: Int32) {
        _ = text.utf8CString.withUnsafeBufferPointer { Glibc.write(descriptor, $0.baseAddress, $0.count - 1) }
    }
}
