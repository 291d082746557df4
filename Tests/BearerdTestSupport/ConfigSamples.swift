/// Configs that between them set every kind of token source and store, for tests that must
/// see every key in use (every key read, every restart-only key compared).
package enum ConfigSamples {
    /// YAML for each token source (OAuth 2.0, JSON, static file) with each store (file,
    /// PostgreSQL); the files they name are written into `directory`.
    package static func everySourceAndStore(in directory: TemporaryDirectory) throws -> [String] {
        let secret = try directory.write("s", to: "secret")
        let key = try directory.write(String(repeating: "k", count: 32), to: "store.key", mode: 0o400)
        _ = try directory.write("postgres://u:p@db.example:5432/b\n", to: "pg.url", mode: 0o400)
        let sources = [
            "auth:\n  token_url: https://idp.example/token\n  client_id: c\n  client_secret_file: \(secret)",
            "auth:\n  json:\n    refresh_url: https://app.example/refresh",
            "auth:\n  static_token_file: \(try directory.write("t0ken\n", to: "token"))",
            "auth:\n  command: [/bin/echo, t0ken]",
        ]
        let stores = [
            "store:\n  key_file: \(key)",
            "store:\n  key_file: \(key)\n  backend: postgres\n  postgres:\n    url_file: pg.url",
        ]
        return sources.flatMap { auth in
            stores.map { store in "upstream:\n  url: https://api.example.com/v2\n\(auth)\n\(store)" }
        }
    }
}
