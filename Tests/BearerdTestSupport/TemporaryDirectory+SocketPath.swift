import Foundation

extension TemporaryDirectory {
    /// A path of exactly `length` bytes for a socket named `name`, in a subdirectory (made here)
    /// whose name takes up what `name` and this directory's path leave.
    package func socketPath(length: Int, named name: String = "s.sock") throws -> String {
        let padding = length - self.path.utf8.count - 2 - name.utf8.count
        guard padding > 0 else {
            throw CocoaError(.fileWriteInvalidFileName, userInfo: [NSFilePathErrorKey: self.path])
        }
        let directory = self.path + "/" + String(repeating: "d", count: padding)
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        return directory + "/" + name
    }
}
