import BearerdLogging
import BearerdTestSupport
import Foundation
import Logging
import Testing

@testable import BearerdProxy

#if canImport(Glibc)
import Glibc
#endif

/// The access lines: formatted as the log handler formats any line, written in batches by a
/// thread of their own, never making an event loop wait for their destination.
@Suite("Access lines", .timeLimit(.minutes(1)))
struct AccessLogTests {
    static let full = AccessRecord(
        method: "POST",
        path: "/a b/\"quoted\"\u{1B}[31m/é",
        status: 201,
        bytesIn: 3,
        bytesOut: 12_345,
        duration: 1234,
        upstream: 7,
        callerUID: 1000,
        callerPID: 4242,
        callerExecutable: "/usr/bin/my tool",
        callerExecutableAge: 90,
        traceID: "4bf92f3577b34da6a3ce929d0e0e4736",
        outcome: "client_closed",
        retried: "upstream_401",
        session: "billing-2"
    )
    static let bare = AccessRecord(
        method: "GET",
        path: "/x",
        status: 0,
        bytesIn: 0,
        bytesOut: 0,
        duration: 0,
        upstream: nil
    )

    /// What `LogfmtLogHandler` writes for the same fields as metadata: the message, then the
    /// keys sorted, each value escaped by `Logfmt.appendValue`.
    static func asTheHandlerWrites(_ record: AccessRecord, prefix: String) -> String {
        var line = prefix + "level=info msg="
        Logfmt.appendValue("request", to: &line)
        let metadata = record.metadata
        for key in metadata.keys.sorted() {
            line += " \(key)="
            Logfmt.appendValue(metadata[key]!.description, to: &line)
        }
        return line
    }

    @Test(arguments: [Self.full, Self.bare])
    func aLineReadsAsTheLogHandlersWould(record: AccessRecord) {
        #expect(record.logfmt(prefix: "<6>") == Self.asTheHandlerWrites(record, prefix: "<6>"))
    }

    @Test func linesReachTheFileInOrderAndAllAtStop() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path + "/access.log"
        let log = try AccessLog(.file(path), interval: 60)
        for status in 0..<1000 {
            var record = Self.bare
            record.status = status
            log.write(record)
        }
        log.stop()
        let lines = try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n")
        #expect(lines.count == 1000)
        #expect(lines.allSatisfy { $0.hasPrefix("ts=") && $0.contains(" level=info msg=request ") })
        #expect(lines.last?.hasSuffix(" status=999") == true)
    }

    /// logrotate moves the file away and reloads bearerd: the lines after go to a new file.
    @Test func aReopenedFileTakesTheLinesAfter() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path + "/access.log"
        let log = try AccessLog(.file(path), interval: 0.05)
        log.write(Self.bare)
        try self.waitForLines(1, in: path)
        #expect(rename(path, path + ".1") == 0)
        log.reopen()
        var after = Self.bare
        after.path = "/after"
        log.write(after)
        log.stop()
        #expect(try String(contentsOfFile: path + ".1", encoding: .utf8).contains("path=/x "))
        let fresh = try String(contentsOfFile: path, encoding: .utf8)
        #expect(fresh.contains("path=/after ") && !fresh.contains("path=/x "), "\(fresh)")
    }

    /// A destination nobody reads (a journal that stalls): writes never wait; past 1 MiB
    /// waiting, lines are dropped, and once the reader comes a line says how many.
    @Test func aStalledDestinationDropsLinesAndSaysHowMany() throws {
        var ends: [Int32] = [0, 0]
        #expect(pipe(&ends) == 0)
        defer { close(ends[0]) }
        let log = try AccessLog(.file("/proc/self/fd/\(ends[1])"), interval: 0.05)
        close(ends[1])
        let started = ContinuousClock.now
        for _ in 0..<20_000 { log.write(Self.full) }  // about 6 MB
        #expect(ContinuousClock.now - started < .seconds(5), "a write waited for the destination")
        // Read until the count of dropped lines appears.
        var seen: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        let deadline = ContinuousClock.now + .seconds(20)
        while !String(decoding: seen.suffix(4096), as: UTF8.self).contains("dropped="), ContinuousClock.now < deadline {
            let count = buffer.withUnsafeMutableBytes { read(ends[0], $0.baseAddress, $0.count) }
            if count <= 0 { break }
            seen += buffer[..<count]
        }
        let text = String(decoding: seen, as: UTF8.self)
        let written = text.split(separator: "\n").filter { $0.contains("msg=request") }.count
        let dropped = text.split(separator: " ").first { $0.hasPrefix("dropped=") }.flatMap {
            Int($0.dropFirst(8).prefix { $0.isNumber })
        }
        #expect(
            dropped != nil && written + (dropped ?? 0) == 20_000,
            "written \(written), dropped \(String(describing: dropped))"
        )
        #expect(text.contains("level=warning msg=\"access lines dropped: their destination did not keep up\""))
        log.stop(limit: 0.5)
    }

    /// An access line is an info line, as when it went through the logger: `log.level:
    /// warning` leaves it out of the daemon's writer too.
    @Test(arguments: [(Logger.Level.info, 1), (.warning, 0)])
    func theLogLevelDecidesAsForAnyInfoLine(level: Logger.Level, lines: Int) throws {
        let directory = try TemporaryDirectory()
        let path = directory.path + "/access.log"
        let log = try AccessLog(.file(path), interval: 60)
        let proxy = try EmbeddedProxy("", accessLines: log, logLevel: level)
        try proxy.send("GET /x HTTP/1.1\r\nHost: h\r\n\r\n")
        try proxy.upstream.answer("HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok")
        #expect(try proxy.received().hasPrefix("HTTP/1.1 200 "))
        log.stop()
        let text = try String(contentsOfFile: path, encoding: .utf8)
        #expect(text.split(separator: "\n").count == lines, "\(text)")
    }

    /// To standard error (a pipe, shared with the other log lines) a batch goes in whole lines
    /// of at most 4096 bytes, each write atomic there; a longer line goes alone.
    @Test func aBatchForStandardErrorGoesInWholeLinesOfAtMostPipeBuf() {
        let lines = (0..<200).map { String(repeating: "x", count: $0 * 7 % 300) + "\n" }
        let long = String(repeating: "y", count: 5000) + "\n"
        let batch = Array((lines[..<100].joined() + long + lines[100...].joined()).utf8)
        let pieces = AccessLog.pieces(of: batch[...])
        #expect(pieces.first?.lowerBound == 0 && pieces.last?.upperBound == batch.count)
        #expect(zip(pieces, pieces.dropFirst()).allSatisfy { $0.upperBound == $1.lowerBound })
        for piece in pieces {
            #expect(batch[piece.upperBound - 1] == UInt8(ascii: "\n"), "a piece ends inside a line")
            #expect(piece.count <= 4096 || batch[piece].filter { $0 == UInt8(ascii: "\n") }.count == 1)
        }
        #expect(pieces.contains { $0.count == 5001 }, "the long line alone")
    }

    private func waitForLines(_ count: Int, in path: String) throws {
        let deadline = ContinuousClock.now + .seconds(10)
        while ContinuousClock.now < deadline {
            let text = (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
            if text.split(separator: "\n").count >= count { return }
            usleep(10_000)
        }
        Issue.record("\(count) lines did not reach \(path)")
    }
}
