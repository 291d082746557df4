import BearerdFiles
import BearerdWire
import Foundation

/// A shared secret that TCP callers must send in a header (`proxy.client_key_file`): a local
/// process that can connect to 127.0.0.1 but cannot read the key file cannot use the token.
/// Compared in constant time; the header never reaches the upstream; the key never reaches a log.
struct ClientKey: Sendable, CustomStringConvertible {
    let header: String
    private let key: [UInt8]

    init(file: String, header: String) throws {
        let contents: (bytes: [UInt8], mode: mode_t)?
        do throws(FileCheckError) {
            contents = try CheckedDirectory.read(file: file, limit: 64 << 10)
        } catch {
            throw ProxyError.setup("proxy.client_key_file: \(error)", underlying: error)
        }
        guard let contents else {
            throw ProxyError.setup(
                "proxy.client_key_file: \(file) does not exist: create it (bearerd keygen, or any 16+ characters)"
            )
        }
        let text = String(decoding: contents.bytes, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        guard text.utf8.count >= 16, !text.contains(where: \.isNewline) else {
            throw ProxyError.setup(
                "proxy.client_key_file: \(file) must hold one key of at least 16 characters, on one line"
            )
        }
        self.header = header
        self.key = Array(text.utf8)
    }

    /// Whether `raw[name]` is the key's header (names compare without case).
    func isHeader(_ raw: UnsafeRawBufferPointer, _ name: Range<Int>) -> Bool {
        HeaderName.equals(raw, name, name: self.header)
    }

    /// Whether `value` is the key, in time that does not depend on where they differ.
    func matches(_ value: String) -> Bool {
        var value = value
        return value.withUTF8 { self.matches(UnsafeRawBufferPointer($0), 0..<$0.count) }
    }

    /// Whether `raw[value]` is the key, in time that does not depend on where they differ.
    func matches(_ raw: UnsafeRawBufferPointer, _ value: Range<Int>) -> Bool {
        // The lengths compare whole: a key followed by 256 more bytes is not the key.
        let lengthDifference = value.count ^ self.key.count
        var difference: UInt8 = 0
        for index in 0..<self.key.count {
            difference |= self.key[index] ^ (index < value.count ? raw[value.lowerBound + index] : 0)
        }
        return difference == 0 && lengthDifference == 0
    }

    var description: String { "ClientKey(header: \(self.header), key: redacted)" }
}
