import BearerdTestSupport
import Foundation

/// A shared temporary directory with a token file, for tests that only need a valid config.
enum BearerdTestSupportShim {
    private static let shared: TemporaryDirectory = {
        let directory = try! TemporaryDirectory()
        try! directory.write("tok-123", to: "token")
        return directory
    }()

    static func directory() throws -> String { self.shared.path }
}
