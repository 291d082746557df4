import BearerdConfig
import BearerdTokens
import Logging

extension Startup {
    /// What the issuer's metadata said before anything listens.
    enum Discovered {
        /// Nothing to discover: `auth.token_url`, or another token source.
        case notNeeded
        /// Each endpoint found, its URL and the document that named it.
        case found([(endpoint: String, url: String, document: String)])
        /// The issuer did not answer (or answered 5xx): it may later, so `serve` starts anyway
        /// and the engine retries; the text says which documents failed how.
        case unreachable(String)
    }

    /// With `auth.issuer`: reads the issuer's metadata now, for `check-config` and `serve`. The
    /// source keeps what it found, so `serve`'s first token request does not ask again.
    /// - Throws: a config ``CommandError`` (`serve` exits 78) naming `auth.issuer` when every
    ///   document answered and none is usable metadata (404, 410, another issuer's): asking again
    ///   will not change that.
    static func discover(_ prepared: Prepared, logger: Logger) async throws(CommandError) -> Discovered {
        guard case .oauth2(let oauth2) = prepared.configuration.auth.source, oauth2.tokenURL == nil,
            case .engine(let source as OAuth2Source, _, _, let settings, _, _) = prepared.tokens
        else { return .notNeeded }
        let transport: HTTPClientTokenTransport
        do {
            transport = try settings.make(logger: logger)
        } catch {
            throw CommandError("cannot set up the token client: \(error)", code: .config, underlying: error)
        }
        let found: Result<Discovered, CommandError>
        do {
            found = .success(.found(try await source.discoveredEndpoints(transport: transport)))
        } catch let error as TokenEngineError where error.code == .unreachable {
            found = .success(.unreachable("\(error)"))
        } catch {
            found = .failure(CommandError(keys: ["auth.issuer"], message: "\(error)"))
        }
        try? await transport.shutdown()
        return try found.get()
    }
}
