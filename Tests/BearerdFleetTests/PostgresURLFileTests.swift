import BearerdTestSupport
import Testing

@testable import BearerdFleet

/// `store.postgres.url_file` holds a password: a FIFO or a socket there is refused at once,
/// never waited on (issue 35).
@Suite("store.postgres.url_file that is not a regular file", .timeLimit(.minutes(1)))
struct PostgresURLFileTests {
    @Test(arguments: [SpecialFile.fifo, .socket, .directory])
    func aURLFileThatIsNotARegularFileIsRefusedAtOnce(kind: SpecialFile) async throws {
        let directory = try TemporaryDirectory()
        let file = directory.path + "/pg.url"
        try kind.make(at: file)
        let (message, jammed) = try await withoutBlocking(on: [file]) { () -> String? in
            do throws(FleetStoreError) {
                _ = try PostgresURL.read(file)
                return nil
            } catch {
                return error.description
            }
        }
        #expect(!jammed, "reading the URL file waited in open()")
        #expect(message?.contains("\(file) is \(kind), not a regular file: remove it") == true, "\(message ?? "nil")")
    }
}
