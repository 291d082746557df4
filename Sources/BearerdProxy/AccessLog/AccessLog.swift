import BearerdLogging
import BearerdWire
import Foundation
import Logging

#if canImport(Glibc)
import Glibc
#endif

/// The daemon's access lines (`log.access`), written in batches by a thread of their own, as
/// nginx's `access_log … buffer=64k flush=1s`: a line is appended to a buffer under a lock and
/// the thread writes the buffer when it holds 64 KiB, once a second, and at the end. An event
/// loop never waits for the disk or the journal: when the destination is slower than the
/// requests and 1 MiB waits, further lines are dropped, counted, and the count written as a
/// line of its own once the writer catches up.
///
/// The destination is standard error (journald under systemd, with its `<6>` priority prefix)
/// or a file (`log.access_file`), opened for appending and opened again by ``reopen()`` (a
/// reload), so that logrotate can move it away.
package final class AccessLog: @unchecked Sendable {
    /// Where the lines go.
    package enum Destination: Sendable, Equatable {
        case standardError(journald: Bool)
        case file(String)
    }

    /// A batch is written once it holds this much, or a second after its first line.
    static let batchBytes = 64 << 10
    /// At most this much waits for the writer; lines past it are dropped.
    static let pendingLimit = 1 << 20

    private let destination: Destination
    private let interval: Double
    /// Guards every `var` below; its value says whether the writer should wake now.
    private let lock = MonotonicCondition(value: false)
    private var pending: [UInt8] = []
    private var dropped = 0
    /// Asked to open the file again: the lines pending up to this offset go to the old one.
    private var reopenAt: Int?
    private var stopping = false
    private let finished = MonotonicCondition(value: false)
    /// Written only by the writer thread (and before it starts).
    private var descriptor: Int32

    /// Opens the destination and starts the writer. `interval`: the longest a line waits.
    /// - Throws: ``ProxyError/setup(_:)`` when the file cannot be opened (the caller names the key).
    package init(_ destination: Destination, interval: Double = 1) throws {
        self.destination = destination
        self.interval = interval
        switch destination {
        case .standardError: self.descriptor = 2
        case .file(let path):
            let descriptor = Self.open(path)
            guard descriptor >= 0 else {
                throw ProxyError.setup(
                    "cannot open \(path) for appending (\(String(cString: strerror(errno)))): create its directory, writable by bearerd's user, or correct the path"
                )
            }
            self.descriptor = descriptor
        }
        self.pending.reserveCapacity(Self.batchBytes * 2)
        let thread = Thread { [self] in self.run() }
        thread.name = "bearerd-access-log"
        thread.start()
    }

    /// Every line starts with this: journald's priority, or the time for a file or a terminal.
    var prefix: String {
        if case .standardError(journald: true) = self.destination { return "<6>" }
        return "ts=\(Logfmt.timestamp()) "
    }

    /// Appends one line; never waits for the destination.
    func write(_ record: AccessRecord) {
        var line = record.logfmt(prefix: self.prefix)
        line += "\n"
        self.lock.lock()
        guard self.pending.count + line.utf8.count <= Self.pendingLimit, !self.stopping else {
            self.dropped += 1
            self.lock.unlock()
            return
        }
        self.pending.append(contentsOf: line.utf8)
        if self.pending.count >= Self.batchBytes {
            self.lock.unlock(withValue: true)
        } else {
            self.lock.unlock()
        }
    }

    /// Opens the file again at its path before the next write (logrotate moved it away); for
    /// standard error, nothing.
    package func reopen() {
        guard case .file = self.destination else { return }
        self.lock.lock()
        if self.reopenAt == nil { self.reopenAt = self.pending.count }
        self.lock.unlock(withValue: true)
    }

    /// Writes what is pending and stops the writer; lines after it are dropped. Waits for the
    /// last write at most `limit` seconds (a destination that does not take it).
    package func stop(limit: Double = 5) {
        self.lock.lock()
        let first = !self.stopping
        self.stopping = true
        self.lock.unlock(withValue: true)
        guard first else { return }
        if self.finished.lock(whenValue: true, timeoutSeconds: limit) { self.finished.unlock() }
    }

    private func run() {
        var batch: [UInt8] = []
        batch.reserveCapacity(Self.batchBytes * 2)
        while true {
            if !self.lock.lock(whenValue: true, timeoutSeconds: self.interval) { self.lock.lock() }
            swap(&batch, &self.pending)
            let (dropped, reopenAt, stopping) = (self.dropped, self.reopenAt, self.stopping)
            self.dropped = 0
            self.reopenAt = nil
            self.lock.unlock(withValue: false)
            if let reopenAt, case .file(let path) = self.destination {
                self.put(batch[..<reopenAt])
                let descriptor = Self.open(path)
                if descriptor >= 0 {
                    close(self.descriptor)
                    self.descriptor = descriptor
                } else {
                    // Said on standard error (the journal), where bearerd's other lines go.
                    let error = String(cString: strerror(errno))
                    var line = "ts=\(Logfmt.timestamp()) level=warning msg=\"log.access_file: cannot open it again;"
                    line += " access lines go on to the file it had open\" path="
                    Logfmt.appendValue(path, to: &line)
                    line += " error="
                    Logfmt.appendValue(error, to: &line)
                    line += "\n"
                    _ = line.utf8CString.withUnsafeBufferPointer { Glibc.write(2, $0.baseAddress, $0.count - 1) }
                }
                self.put(batch[reopenAt...])
            } else {
                self.put(batch[...])
            }
            batch.removeAll(keepingCapacity: true)
            if dropped > 0 { self.put(self.droppedLine(dropped)[...]) }
            if stopping { break }
        }
        if case .file = self.destination { close(self.descriptor) }
        self.finished.lock()
        self.finished.unlock(withValue: true)
    }

    /// The line that says how many lines were dropped, at warning level.
    private func droppedLine(_ count: Int) -> [UInt8] {
        var line: String
        if case .standardError(journald: true) = self.destination {
            line = "<\(Logfmt.priority(.warning))>"
        } else {
            line = "ts=\(Logfmt.timestamp()) "
        }
        line += "level=warning msg=\"access lines dropped: their destination did not keep up\" dropped=\(count)\n"
        return Array(line.utf8)
    }

    /// Writes `bytes`: to a file at once; to standard error in ``pieces(of:)``.
    private func put(_ bytes: ArraySlice<UInt8>) {
        guard case .standardError = self.destination else { return self.putWhole(bytes) }
        for piece in Self.pieces(of: bytes) { self.putWhole(bytes[piece]) }
    }

    /// Standard error is shared with bearerd's other lines and is often a pipe (a container's,
    /// journald's stream): a write of at most `PIPE_BUF` (4096) bytes is atomic there, so the
    /// batch goes in pieces of whole lines of at most that, and no other line lands inside
    /// one. A line longer than that goes alone.
    static func pieces(of bytes: ArraySlice<UInt8>, limit: Int = 4096) -> [Range<Int>] {
        var pieces: [Range<Int>] = []
        var start = bytes.startIndex
        while start < bytes.endIndex {
            var end = min(start + limit, bytes.endIndex)
            if end < bytes.endIndex {
                if let newline = bytes[start..<end].lastIndex(of: UInt8(ascii: "\n")) {
                    end = newline + 1
                } else {
                    end = bytes[end...].firstIndex(of: UInt8(ascii: "\n")).map { $0 + 1 } ?? bytes.endIndex
                }
            }
            pieces.append(start..<end)
            start = end
        }
        return pieces
    }

    /// Writes `bytes` whole (a short write continues; an error drops the rest).
    private func putWhole(_ bytes: ArraySlice<UInt8>) {
        bytes.withUnsafeBytes { buffer in
            var offset = 0
            while offset < buffer.count {
                let written = Glibc.write(self.descriptor, buffer.baseAddress! + offset, buffer.count - offset)
                if written < 0 && errno == EINTR { continue }
                if written <= 0 { return }
                offset += written
            }
        }
    }

    private static func open(_ path: String) -> Int32 {
        Glibc.open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0o640)
    }
}
