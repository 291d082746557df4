import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Reads a pipe to its end on a thread of its own and hands each chunk to `sink`.
///
/// Not `FileHandle.readabilityHandler`: on Linux its libdispatch source can outlive the pipe, and
/// libdispatch's manager thread then crashes in `_dispatch_event_loop_drain` (a bad pointer at
/// 0x3 here, one run in a few; swift-corelibs-foundation#3276). A blocking `read` ends at end of
/// file, when the child and everything it started have closed their end.
enum PipeReader {
    static func start(_ handle: FileHandle, _ sink: @escaping @Sendable ([UInt8]) -> Void) {
        let thread = Thread {
            // The handle owns the descriptor: it stays open while this thread reads it.
            let descriptor = handle.fileDescriptor
            var buffer = [UInt8](repeating: 0, count: 64 << 10)
            while true {
                let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
                if count > 0 {
                    sink(Array(buffer[..<count]))
                } else if count == 0 || errno != EINTR {
                    break
                }
            }
            try? handle.close()
        }
        thread.name = "pipe-reader"
        thread.start()
    }
}
