// swift-tools-version: 6.2
import PackageDescription

let strict: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("MemberImportVisibility"),
]

/// The products the targets use, each named once.
enum Product {
    static let argumentParser: Target.Dependency = .product(name: "ArgumentParser", package: "swift-argument-parser")
    static let asyncHTTPClient: Target.Dependency = .product(name: "AsyncHTTPClient", package: "async-http-client")
    static let configuration: Target.Dependency = .product(name: "Configuration", package: "swift-configuration")
    static let crypto: Target.Dependency = .product(name: "Crypto", package: "swift-crypto")
    static let inMemoryLogging: Target.Dependency = .product(name: "InMemoryLogging", package: "swift-log")
    static let jwtKit: Target.Dependency = .product(name: "JWTKit", package: "jwt-kit")
    static let logging: Target.Dependency = .product(name: "Logging", package: "swift-log")
    static let metrics: Target.Dependency = .product(name: "Metrics", package: "swift-metrics")
    static let nioConcurrencyHelpers: Target.Dependency = .product(name: "NIOConcurrencyHelpers", package: "swift-nio")
    static let nioCore: Target.Dependency = .product(name: "NIOCore", package: "swift-nio")
    static let nioEmbedded: Target.Dependency = .product(name: "NIOEmbedded", package: "swift-nio")
    static let nioExtras: Target.Dependency = .product(name: "NIOExtras", package: "swift-nio-extras")
    static let nioHTTP1: Target.Dependency = .product(name: "NIOHTTP1", package: "swift-nio")
    static let nioPosix: Target.Dependency = .product(name: "NIOPosix", package: "swift-nio")
    static let nioSSL: Target.Dependency = .product(name: "NIOSSL", package: "swift-nio-ssl")
    static let otel: Target.Dependency = .product(name: "OTel", package: "swift-otel")
    static let postgresNIO: Target.Dependency = .product(name: "PostgresNIO", package: "postgres-nio")
    static let prometheus: Target.Dependency = .product(name: "Prometheus", package: "swift-prometheus")
    static let serviceLifecycle: Target.Dependency = .product(
        name: "ServiceLifecycle",
        package: "swift-service-lifecycle"
    )
    static let tracing: Target.Dependency = .product(name: "Tracing", package: "swift-distributed-tracing")
    static let unixSignals: Target.Dependency = .product(name: "UnixSignals", package: "swift-service-lifecycle")
    static let yams: Target.Dependency = .product(name: "Yams", package: "Yams")
}

// How the daemon is linked on Linux (measured for issue 14, RSS under load):
// - `-static-stdlib`: the Swift runtime and Foundation are linked in and dead-stripped, instead of
//   mapping fourteen toolchain libraries whose pages the kernel faults in 64 KiB at a time;
// - `--no-export-dynamic`: swiftc exports every symbol of an executable (49,000 here), a 4 MB
//   symbol table the loader reads for nothing; nothing dlopens bearerd or looks symbols up in it;
// - lld with `-z pack-relative-relocs` (glibc 2.36+): the 140,000 relative relocations of the
//   type metadata take a few kilobytes instead of a 3.3 MB table read at every start.
let daemonLinking: [LinkerSetting] = [
    .unsafeFlags(
        [
            "-static-stdlib", "-use-ld=lld",
            // What the toolchain's static Foundation links to (`swift-autolink-extract` on its
            // archives); objects compiled against the shared Foundation do not name them.
            "-l_FoundationICU", "-l_FoundationCollections", "-l_FoundationCShims", "-lCoreFoundation",
            "-lswiftDispatch", "-lswiftSynchronization", "-ldispatch", "-lBlocksRuntime", "-lutil",
            "-Xlinker", "--no-export-dynamic",
            "-Xlinker", "-z", "-Xlinker", "pack-relative-relocs",
        ],
        .when(platforms: [.linux])
    )
]

let package = Package(
    name: "bearerd",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "bearerd", targets: ["bearerd"])
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.37.6"),
        .package(url: "https://github.com/apple/swift-nio-extras", from: "1.35.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-configuration", from: "1.4.0", traits: ["YAML"]),
        .package(url: "https://github.com/jpsim/Yams", from: "6.2.2"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
        .package(url: "https://github.com/vapor/postgres-nio", from: "1.33.2"),
        .package(url: "https://github.com/vapor/jwt-kit", from: "5.8.0"),
        // jwt-kit's own crypto (already in the build): DPoP proofs are signed on the event loop,
        // synchronously, with its P-256 keys; jwt-kit signs only through an async key collection.
        .package(url: "https://github.com/apple/swift-crypto", from: "4.5.2"),
        // Traces (issue 38): the Tracing API in the data path and the engine, swift-otel's OTLP/HTTP
        // exporter in the daemon only. Not its gRPC exporter: grpc-swift would double the build.
        .package(url: "https://github.com/apple/swift-distributed-tracing", from: "1.7.3"),
        .package(url: "https://github.com/swift-otel/swift-otel", from: "1.6.0", traits: ["OTLPHTTP"]),
    ],
    targets: [
        // Token types and the seam the proxy asks for a token through.
        .target(
            name: "BearerdAuth",
            dependencies: [
                "BearerdFiles", "BearerdLogging",
                Product.logging,
            ],
            swiftSettings: strict
        ),
        // Files opened relative to a checked directory: no symlinks or foreign owners where
        // others may write.
        .target(
            name: "BearerdFiles",
            swiftSettings: strict
        ),
        // Unix socket files put in place safely, peer credentials, the rebinding guard: what the
        // proxy's listeners and the admin socket share.
        .target(
            name: "BearerdSockets",
            dependencies: [
                "BearerdFiles",
                Product.nioCore,
            ],
            swiftSettings: strict
        ),
        // HTTP/1.1 as bytes: the request and response parsers, head writer, body framer, canonical target.
        .target(
            name: "BearerdWire",
            dependencies: [
                Product.nioCore
            ],
            swiftSettings: strict
        ),
        // The config file: schema, loading (YAML + environment), validation.
        .target(
            name: "BearerdConfig",
            dependencies: [
                "BearerdAuth",
                "BearerdFiles",
                "BearerdFleet",
                "BearerdProxy",
                "BearerdSockets",
                // The sections are the modules' own types (``OAuth2Client``, ``ProxyOptions``,
                // ...): the config reads them, the modules do not read the config.
                "BearerdTokens",
                "BearerdWire",
                Product.configuration,
                Product.yams,
                // `log.level` is read as swift-log's `Logger.Level`, not a string.
                Product.logging,
            ],
            swiftSettings: strict
        ),
        // The token engine: sources (OAuth2, custom JSON), expiry, the refresh critical section.
        // No HTTP client (BearerdCLI supplies one through `TokenTransport`), so that its parsers
        // build for the fuzzers without async-http-client and TLS.
        .target(
            name: "BearerdTokens",
            dependencies: [
                "BearerdAuth",
                "BearerdFiles",
                Product.tracing,
                Product.logging,
                Product.serviceLifecycle,
                Product.metrics,
                // SHA-256 for PKCE (RFC 7636): already linked for JOSE, BoringSSL-backed.
                Product.crypto,
            ],
            swiftSettings: strict
        ),
        // The system's OpenSSL libcrypto (libssl-dev), for the token store.
        // prctl, which Swift cannot call (it is variadic).
        .systemLibrary(name: "CBearerdSystem"),
        .systemLibrary(
            name: "CBearerdCrypto",
            pkgConfig: "libcrypto",
            providers: [.apt(["libssl-dev"])]
        ),
        // The encrypted token store: AES-256-GCM file format, keys, atomic writes, the lock.
        .target(
            name: "BearerdStore",
            dependencies: [
                "BearerdAuth",
                "BearerdTokens",
                "BearerdFiles",
                "CBearerdCrypto",
                Product.logging,
            ],
            swiftSettings: strict
        ),
        // A fleet's shared session in PostgreSQL: the sealed row, the refresh lock, LISTEN/NOTIFY.
        .target(
            name: "BearerdFleet",
            dependencies: [
                "BearerdAuth",
                "BearerdTokens",
                "BearerdStore",
                Product.postgresNIO,
                Product.nioCore,
                Product.nioPosix,
                Product.nioSSL,
                Product.logging,
                Product.metrics,
                Product.serviceLifecycle,
            ],
            swiftSettings: strict
        ),
        // JOSE through jwt-kit: signed client assertions (private_key_jwt, RFC 7523), verified
        // access tokens; DPoP proofs (RFC 9449) with swift-crypto's P-256.
        .target(
            name: "BearerdJOSE",
            dependencies: [
                "BearerdAuth",
                "BearerdTokens",
                Product.jwtKit,
                Product.crypto,
            ],
            swiftSettings: strict
        ),
        // Lines an outside party can cause at request rate, written once, then summarised.
        .target(
            name: "BearerdLogging",
            dependencies: [
                Product.logging,
                Product.nioCore,
            ],
            swiftSettings: strict
        ),
        // The data path: NIO channel handlers, the upstream pool, the listeners.
        .target(
            name: "BearerdProxy",
            dependencies: [
                "BearerdLogging",
                Product.tracing,
                "BearerdFiles",
                "BearerdSockets",
                "BearerdAuth",
                "BearerdWire",
                Product.nioCore,
                Product.nioConcurrencyHelpers,
                Product.nioPosix,
                Product.nioHTTP1,
                Product.nioSSL,
                Product.nioExtras,
                Product.logging,
                Product.serviceLifecycle,
                Product.metrics,
                // SHA-1 for a WebSocket 101's Sec-WebSocket-Accept (RFC 6455 §4.2.2).
                Product.crypto,
            ],
            swiftSettings: strict
        ),
        // The admin socket: login, logout, status and token through the running daemon.
        .target(
            name: "BearerdAdmin",
            dependencies: [
                "BearerdLogging",
                "BearerdAuth",
                "BearerdTokens",
                "BearerdSockets",
                Product.nioCore,
                Product.nioConcurrencyHelpers,
                Product.nioPosix,
                Product.nioHTTP1,
                Product.logging,
                Product.serviceLifecycle,
            ],
            swiftSettings: strict
        ),
        // systemd: sd_notify (ready, status, watchdog, reload, stopping) and socket activation.
        .target(
            name: "BearerdSystemd",
            dependencies: [
                Product.logging,
                Product.serviceLifecycle,
            ],
            swiftSettings: strict
        ),
        // Wiring and the command line.
        .target(
            name: "BearerdCLI",
            dependencies: [
                "BearerdFiles",
                "BearerdSockets",
                "CBearerdSystem",
                "BearerdAuth",
                "BearerdConfig",
                "BearerdProxy",
                "BearerdTokens",
                "BearerdStore",
                "BearerdFleet",
                "BearerdJOSE",
                "BearerdAdmin",
                "BearerdSystemd",
                "BearerdWire",
                Product.argumentParser,
                Product.asyncHTTPClient,
                Product.logging,
                Product.metrics,
                Product.prometheus,
                Product.otel,
                Product.tracing,
                Product.serviceLifecycle,
                Product.unixSignals,
                Product.nioCore,
                Product.nioPosix,
                Product.nioHTTP1,
                Product.nioSSL,
            ],
            swiftSettings: strict,
            plugins: ["CommitStamp"]
        ),
        // `bearerd version` names the commit of every build made from a git checkout.
        .executableTarget(name: "bearerd-commit-stamp", swiftSettings: strict),
        .plugin(name: "CommitStamp", capability: .buildTool(), dependencies: ["bearerd-commit-stamp"]),
        .executableTarget(
            name: "bearerd",
            dependencies: [
                "BearerdCLI",
                Product.argumentParser,
            ],
            swiftSettings: strict,
            linkerSettings: daemonLinking
        ),
        // The fuzz targets: bearerd's parsers of untrusted input, with the promises they keep.
        // `scripts/fuzz TARGET SECONDS` builds bearerd-fuzz with libFuzzer and AddressSanitizer;
        // the data path's parsers come from BearerdWire, not BearerdProxy, so none of this
        // depends on async-http-client, swift-nio-ssl or BoringSSL (swift-crypto).
        .target(
            name: "BearerdFuzzTargets",
            dependencies: [
                "BearerdAuth", "BearerdTokens", "BearerdConfig", "BearerdStore", "BearerdWire",
                Product.nioCore,
                Product.nioEmbedded,
                Product.nioHTTP1,
            ],
            swiftSettings: strict
        ),
        .executableTarget(
            name: "bearerd-fuzz",
            dependencies: ["BearerdFuzzTargets"],
            swiftSettings: strict
        ),
        // In-process servers, clients and log capture for the tests.
        .target(
            name: "BearerdTestSupport",
            dependencies: [
                "CBearerdSystem",
                "BearerdAuth",
                "BearerdTokens",
                "BearerdConfig",
                "BearerdProxy",
                Product.nioCore,
                Product.nioPosix,
                Product.nioHTTP1,
                Product.nioSSL,
                Product.logging,
                Product.inMemoryLogging,
            ],
            path: "Tests/BearerdTestSupport",
            swiftSettings: strict
        ),
        .testTarget(
            name: "BearerdFuzzTests",
            dependencies: ["BearerdFuzzTargets"],
            swiftSettings: strict
        ),
        .testTarget(
            name: "BearerdConfigTests",
            dependencies: [
                "BearerdConfig", "BearerdAuth", "BearerdTokens", "BearerdWire", "BearerdTestSupport",
                Product.logging,
                Product.configuration,
            ],
            swiftSettings: strict
        ),
        .testTarget(
            name: "BearerdWireTests",
            dependencies: [
                "BearerdWire",
                Product.nioCore,
            ],
            swiftSettings: strict
        ),
        .testTarget(
            name: "BearerdLoggingTests",
            dependencies: [
                "BearerdLogging",
                Product.nioCore,
                Product.nioEmbedded,
                Product.logging,
                Product.inMemoryLogging,
            ],
            swiftSettings: strict
        ),
        .testTarget(
            name: "BearerdProxyTests",
            dependencies: [
                "BearerdProxy", "BearerdAuth", "BearerdConfig", "BearerdSockets", "BearerdTestSupport",
                "BearerdLogging", "BearerdWire",
                Product.nioCore,
                Product.nioPosix,
                Product.nioHTTP1,
                Product.nioConcurrencyHelpers,
                Product.nioEmbedded,
                Product.logging,
                Product.inMemoryLogging,
                Product.serviceLifecycle,
            ],
            swiftSettings: strict
        ),
        .testTarget(
            name: "BearerdTokensTests",
            dependencies: [
                "BearerdTokens", "BearerdAuth", "BearerdFiles", "BearerdTestSupport",
                Product.logging,
                Product.inMemoryLogging,
                Product.nioCore,
            ],
            swiftSettings: strict
        ),
        .testTarget(
            name: "BearerdFleetTests",
            dependencies: [
                "BearerdFleet", "BearerdTokens", "BearerdStore", "BearerdConfig", "BearerdAuth", "BearerdTestSupport",
                "BearerdJOSE",
                Product.postgresNIO,
                Product.nioPosix,
                Product.logging,
                Product.inMemoryLogging,
            ],
            swiftSettings: strict
        ),
        .testTarget(
            name: "BearerdJOSETests",
            dependencies: [
                "BearerdJOSE", "BearerdTokens", "BearerdAuth", "BearerdTestSupport",
                Product.jwtKit,
            ],
            swiftSettings: strict
        ),
        .testTarget(
            name: "BearerdStoreTests",
            dependencies: ["BearerdStore", "BearerdTokens", "BearerdAuth", "BearerdTestSupport"],
            swiftSettings: strict
        ),
        .testTarget(
            name: "BearerdE2ETests",
            dependencies: [
                "BearerdTestSupport",
                Product.nioCore,
                Product.nioPosix,
                Product.nioHTTP1,
            ],
            swiftSettings: strict
        ),
        .testTarget(
            name: "BearerdCLITests",
            dependencies: [
                "BearerdCLI", "BearerdTestSupport", "BearerdConfig", "BearerdFiles",
                Product.asyncHTTPClient,
                Product.inMemoryLogging,
                Product.nioCore,
                Product.nioPosix,
                Product.nioHTTP1,
            ],
            swiftSettings: strict
        ),
    ]
)
