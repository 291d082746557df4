import BearerdAuth
import BearerdConfig
import BearerdFiles
import BearerdJOSE
import BearerdTokens
import Foundation
import Logging

/// The token source the config describes, checked (secret files read) but not started: no
/// client, no task, nothing to shut down until `serve` starts it.
enum TokenPlan {
    case staticToken(StaticTokenProvider)
    case engine(
        source: any TokenSource,
        seed: Secret?,
        policy: RefreshPolicy,
        transport: Transport,
        verifier: (any TokenVerifier)?,
        dpop: DPoPKey?
    )

    /// How the token client reaches the token server (`auth.ca_file`, `auth.tls_cert_file`,
    /// `auth.request_timeout`, `auth.connect_timeout`).
    struct Transport {
        var caFile: String?
        var clientCertificate: ClientCertificateFiles?
        var timeout: Duration
        var connectTimeout: Duration

        /// The client; a certificate or key that cannot be used throws, naming its key.
        func make(logger: Logger) throws -> HTTPClientTokenTransport {
            try HTTPClientTokenTransport(
                caFile: self.caFile,
                clientCertificate: self.clientCertificate,
                timeout: self.timeout,
                connectTimeout: self.connectTimeout,
                logger: logger
            )
        }
    }

    /// The engine's timing rules from `auth.*` (what a reload may change in a running engine).
    static func policy(_ auth: BearerdConfiguration.Auth) -> RefreshPolicy {
        var policy = RefreshPolicy()
        policy.leeway = auth.leeway
        policy.minimumMargin = auth.refreshMargin
        policy.defaultLifetime = auth.defaultLifetime
        policy.maxRefreshesPerMinute = auth.maxRefreshesPerMinute
        policy.inFlightLimit = auth.requestTimeout * 3 + .seconds(5)
        if case .command(let command) = auth.source {
            policy.inFlightLimit = max(policy.inFlightLimit, command.timeout + .seconds(5))
        }
        policy.scopeStepUp = auth.scopeStepUp.enabled
        policy.scopeStepUpAllowed = Set(auth.scopeStepUp.allowed)
        return policy
    }

    static func make(
        _ auth: BearerdConfiguration.Auth,
        clock: any TokenClock = SystemTokenClock(),
        logger: Logger
    ) throws -> TokenPlan {
        let policy = Self.policy(auth)
        let seed = try auth.refreshTokenFile.map {
            try Self.readSecret($0, key: "auth.refresh_token_file", what: "refresh token")
        }
        let source: any TokenSource
        // `auth.dpop`: a new key, replaced by the store's own when it holds one.
        let dpop = auth.dpop ? DPoPKey() : nil
        switch auth.source {
        case .staticFile(let path):
            return .staticToken(try StaticTokenProvider(path: path, logger: logger))
        case .oauth2(let oauth2):
            source = OAuth2Source(
                settings: .init(
                    client: oauth2,
                    // Read now so a missing file stops the start; read again before each request.
                    clientSecret: try oauth2.clientSecretFile.map {
                        try Self.readSecret($0, key: "auth.client_secret_file", what: "client secret")
                    },
                    clientSecretFile: oauth2.clientSecretFile.map {
                        SecretFile(path: $0, key: "auth.client_secret_file", what: "client secret")
                    },
                    allowInsecureHTTP: auth.allowInsecureHTTP,
                    assertionSigner: try Self.assertionSigner(oauth2, clock: clock, logger: logger),
                    dpop: dpop != nil,
                    clock: clock
                )
            )
        case .json(let json):
            source = JSONSource(settings: json)
        case .command(let command):
            source = CommandSource(settings: command)
        }
        return .engine(
            source: source,
            seed: seed,
            policy: policy,
            transport: Transport(
                caFile: auth.caFile,
                clientCertificate: auth.tlsClientCertificate,
                timeout: auth.requestTimeout,
                connectTimeout: auth.connectTimeout
            ),
            verifier: try auth.verify.map { try Self.verifier($0, source: source) },
            dpop: dpop
        )
    }

    /// A secret file's content, read as the engine reads it before each request
    /// (``SecretFile``); `key` names the file's setting and `what` the secret in errors.
    static func readSecret(_ path: String, key: String, what: String) throws(CommandError) -> Secret {
        do throws(TokenEngineError) {
            return try SecretFile(path: path, key: key, what: what).read()
        } catch {
            throw CommandError(keys: [key], message: error.message)
        }
    }

    /// A file's bytes, read through a checked directory (no symlinks or foreign owners where
    /// others may write), at most 64 KiB; `key` names the setting that names the file.
    static func readFile(_ path: String, key: String) throws(CommandError) -> [UInt8] {
        let contents: (bytes: [UInt8], mode: mode_t)?
        do throws(FileCheckError) {
            contents = try CheckedDirectory.read(file: path, limit: 64 << 10)
        } catch {
            throw CommandError(key: key, "cannot read it: \(error)")
        }
        guard let contents else {
            throw CommandError(key: key, "\(path) does not exist: create it, or correct the path")
        }
        return contents.bytes
    }
}
