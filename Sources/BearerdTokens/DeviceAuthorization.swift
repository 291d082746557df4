import BearerdAuth
import Foundation

/// What the person at the keyboard needs to approve a device login (RFC 8628 §3.3).
package struct DevicePrompt: Sendable, Codable, Equatable {
    package var userCode: String
    package var verificationURI: String
    package var verificationURIComplete: String?
    /// Seconds the code stays valid.
    package var expiresIn: Int

    enum CodingKeys: String, CodingKey {
        case userCode = "user_code"
        case verificationURI = "verification_uri"
        case verificationURIComplete = "verification_uri_complete"
        case expiresIn = "expires_in"
    }
}

/// An RFC 8628 device authorization response (§3.2): the prompt, and what to poll with.
struct DeviceAuthorization: Sendable {
    var prompt: DevicePrompt
    var deviceCode: Secret
    /// Seconds between polls (§3.2 `interval`, 5 when absent).
    var interval: Int

    static func parse(_ body: [UInt8]) throws -> DeviceAuthorization {
        guard let object = JSONValue.parse(body), case .object = object else {
            throw TokenEngineError.body("not a JSON object")
        }
        guard let deviceCode = object["device_code"]?.stringValue, !deviceCode.isEmpty else {
            throw TokenEngineError.body("no device_code")
        }
        guard let userCode = object["user_code"]?.stringValue, Self.printable(userCode, limit: 64) else {
            throw TokenEngineError.body("no readable user_code")
        }
        // `verification_url` is the name some servers (Google) used before the RFC.
        guard let uri = (object["verification_uri"] ?? object["verification_url"])?.stringValue,
            uri.hasPrefix("https://") || uri.hasPrefix("http://"), Self.printable(uri, limit: 2048)
        else {
            throw TokenEngineError.body("no verification_uri")
        }
        let complete = object["verification_uri_complete"]?.stringValue.flatMap {
            ($0.hasPrefix("https://") || $0.hasPrefix("http://")) && Self.printable($0, limit: 2048) ? $0 : nil
        }
        guard let expiresIn = try OAuth2TokenResponse.seconds(object["expires_in"], name: "expires_in"), expiresIn > 0
        else {
            throw TokenEngineError.body("no expires_in")
        }
        let interval = try OAuth2TokenResponse.seconds(object["interval"], name: "interval") ?? 5
        return DeviceAuthorization(
            prompt: DevicePrompt(
                userCode: userCode,
                verificationURI: uri,
                verificationURIComplete: complete,
                expiresIn: Int(min(expiresIn, 86_400))
            ),
            deviceCode: Secret(deviceCode),
            interval: max(1, min(Int(interval), 300))
        )
    }

    /// Safe to print on a terminal: no control characters.
    private static func printable(_ text: String, limit: Int) -> Bool {
        !text.isEmpty && text.utf8.count <= limit
            && text.unicodeScalars.allSatisfy { $0.value >= 0x20 && $0.value != 0x7F }
    }
}
