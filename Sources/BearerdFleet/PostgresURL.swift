import BearerdFiles
import BearerdTokens
import Foundation

/// `store.postgres.url_file`'s content: `postgres://USER:PASSWORD@HOST:PORT/DATABASE`, libpq's
/// form. A unix socket is a percent-encoded directory as the host
/// (`postgres://bearerd@%2Frun%2Fpostgresql/bearerd`). The password never appears in a message.
struct PostgresURL: Sendable {
    enum Address: Sendable, Equatable {
        case tcp(host: String, port: Int)
        /// The socket file: the directory and `.s.PGSQL.PORT`.
        case socket(String)

        var isLocal: Bool {
            switch self {
            case .socket: true
            case .tcp(let host, _): Self.isLoopback(host)
            }
        }
    }

    var address: Address
    var user: String
    var password: Secret?
    var database: String?

    static let key = "store.postgres.url_file"
    /// A URL is a line: more is not one.
    static let maxLength = 4096

    /// Reads and parses the file; errors name the key and never echo the file's content.
    static func read(_ path: String) throws(FleetStoreError) -> PostgresURL {
        // Through a checked directory: a FIFO there is refused, not waited on for ever.
        let contents: (bytes: [UInt8], mode: mode_t)?
        do throws(FileCheckError) {
            contents = try CheckedDirectory.read(file: path, limit: Self.maxLength)
        } catch .tooLarge {
            throw .config(Self.key, "\(path) must hold one postgres:// URL of at most \(Self.maxLength) bytes")
        } catch {
            throw .config(Self.key, "cannot read \(path): \(error)")
        }
        guard let bytes = contents?.bytes else { throw .config(Self.key, "cannot read \(path): no such file") }
        guard let text = String(validating: bytes, as: UTF8.self) else {
            throw .config(Self.key, "\(path) must hold one postgres:// URL of at most \(Self.maxLength) bytes")
        }
        return try Self.parse(text.trimmingCharacters(in: .whitespacesAndNewlines), file: path)
    }

    static func parse(_ text: String, file: String) throws(FleetStoreError) -> PostgresURL {
        let shape = "must hold postgres://USER:PASSWORD@HOST:PORT/DATABASE"
        guard !text.contains(where: { $0.isNewline }), let components = URLComponents(string: text),
            let scheme = components.scheme, scheme == "postgres" || scheme == "postgresql"
        else {
            throw .config(Self.key, "\(file) \(shape)")
        }
        if components.query != nil {
            throw .config(
                Self.key,
                "\(file): the URL's parameters are not read; set store.postgres.sslmode and store.postgres.ca_file instead"
            )
        }
        guard let user = components.user, !user.isEmpty else {
            throw .config(Self.key, "\(file) names no user: it \(shape)")
        }
        let port = components.port ?? 5432
        guard (1...65535).contains(port) else { throw .config(Self.key, "\(file): the port must be from 1 to 65535") }
        let host = components.host ?? ""
        let address: Address
        if host.hasPrefix("/") {
            address = .socket(host + "/.s.PGSQL.\(port)")
        } else if host.isEmpty {
            throw .config(Self.key, "\(file) names no host: it \(shape)")
        } else {
            address = .tcp(host: host.hasPrefix("[") ? String(host.dropFirst().dropLast()) : host, port: port)
        }
        let path = components.path.hasPrefix("/") ? String(components.path.dropFirst()) : components.path
        return PostgresURL(
            address: address,
            user: user,
            password: components.password.map { Secret($0) },
            database: path.isEmpty ? nil : path
        )
    }
}
