#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Writes whole lines to standard error with one `write(2)` each, so lines from several threads
/// never interleave.
enum StandardError {
    static func emit(_ text: String) {
        var line = text
        if !line.hasSuffix("\n") { line.append("\n") }
        line.utf8CString.withUnsafeBufferPointer { buffer in
            var offset = 0
            let count = buffer.count - 1
            while offset < count {
                let written = write(2, buffer.baseAddress! + offset, count - offset)
                if written <= 0 { return }
                offset += written
            }
        }
    }
}
