import NIOCore
import Testing

@testable import BearerdWire

/// ``FieldStorage`` through the parsers: a connection's heads reuse one fields array, and a head
/// still alive is never written into by the next parse.
@Suite("Reused field arrays")
struct FieldStorageTests {
    static func address(_ fields: [HeadField]) -> UnsafeRawPointer? {
        fields.withUnsafeBufferPointer { $0.baseAddress.map { UnsafeRawPointer($0) } }
    }

    static func nextHead(_ parser: inout RequestParser, _ text: String) throws -> RequestHead? {
        var buffer = ByteBuffer(string: text)
        guard case .head(let head) = try parser.next(from: &buffer) else { return nil }
        _ = try parser.next(from: &buffer)  // the end of the bodyless request
        return head
    }

    /// A head of 20 fields grows its array past the 16 a new one starts with; the next head,
    /// parsed into the same array, keeps that capacity (an address could be the allocator's
    /// reuse of the freed block; the capacity cannot).
    static let twentyFields = (1...19).map { "X-\($0): v\r\n" }.joined()

    @Test func theNextRequestIsParsedIntoTheArrayOfTheLastOnceItIsGone() throws {
        var parser = RequestParser(limits: RequestHead.testLimits)
        var first = try Self.nextHead(&parser, "GET /a HTTP/1.1\r\nHost: h\r\n\(Self.twentyFields)\r\n")
        let grown = try #require(first?.fields.capacity)
        #expect(grown > 16)
        first = nil
        let second = try #require(try Self.nextHead(&parser, "GET /b HTTP/1.1\r\nHost: h\r\n\r\n"))
        #expect(second.fields.capacity == grown, "a new array for the next request")
        #expect(second.fieldList == ["host:h"])
    }

    @Test func aHeadStillAliveKeepsItsFields() throws {
        var parser = RequestParser(limits: RequestHead.testLimits)
        let first = try #require(try Self.nextHead(&parser, "GET /a HTTP/1.1\r\nHost: h\r\nX-A: 1\r\n\r\n"))
        let second = try #require(try Self.nextHead(&parser, "GET /b HTTP/1.1\r\nHost: k\r\n\r\n"))
        #expect(Self.address(second.fields) != Self.address(first.fields))
        #expect(first.fieldList == ["host:h", "x-a:1"], "the next parse wrote into a live head")
        #expect(second.fieldList == ["host:k"])
    }

    @Test func aResponseHeadIsParsedIntoTheArrayOfTheLastOnceItIsGone() throws {
        var parser = ResponseParser()
        func head(_ text: String) throws -> ResponseHead? {
            parser.expectResponse(toHEAD: false)
            var buffer = ByteBuffer(string: text)
            guard case .head(let head) = try parser.next(from: &buffer) else { return nil }
            while let part = try parser.next(from: &buffer), case .body = part {}
            return head
        }
        var first = try head("HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\(Self.twentyFields)\r\n")
        let grown = try #require(first?.fields.capacity)
        first = nil
        let held = try #require(try head("HTTP/1.1 401 Unauthorized\r\ncontent-length: 0\r\nx-b: 2\r\n\r\n"))
        #expect(held.fields.capacity == grown, "a new array for the next response")
        // A held 401 lives on while the next response is parsed: that one gets its own array.
        let next = try #require(try head("HTTP/1.1 204 No Content\r\n\r\n"))
        #expect(Self.address(next.fields) != Self.address(held.fields))
        #expect(held.fields.count == 2 && held.status == 401, "the held head changed under its holder")
        #expect(next.fields.isEmpty)
    }

    @Test func aLargeHeadGivesItsArrayBack() {
        var storage = FieldStorage()
        var large = storage.take()
        large.reserveCapacity(FieldStorage.keptCapacity + 1)
        let largeAddress = Self.address(large)
        storage.keep(large)
        large = []
        #expect(Self.address(storage.take()) != largeAddress)
    }
}
