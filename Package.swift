// swift-tools-version:6.1
import Foundation
import PackageDescription

/// How the release binary is linked on Linux, where the toolchain has lld (next to the first
/// `swift` on the PATH): relative relocations packed (`DT_RELR`: the 2.1 MiB of relocations the
/// loader reads at start-up become 0.5). Laying out the functions start-up runs first (a symbol
/// order) cut idle RSS by 6 MiB but made the broadcast's CPU per notification 10–16% dearer, so
/// it is not done (docs/performance.md).
let releaseLink: [LinkerSetting] = {
    // The first `swift` on the PATH, its symbolic links followed: the toolchain that builds.
    let path = ProcessInfo.processInfo.environment["PATH"] ?? ""
    let swift = path.split(separator: ":").lazy
        .map { URL(fileURLWithPath: String($0)).appendingPathComponent("swift") }
        .first { FileManager.default.isExecutableFile(atPath: $0.path) }
    guard let swift,
        FileManager.default.isExecutableFile(
            atPath: swift.resolvingSymlinksInPath().deletingLastPathComponent().appendingPathComponent("ld.lld").path)
    else { return [] }
    return [
        .unsafeFlags(
            ["-use-ld=lld", "-Xlinker", "-z", "-Xlinker", "pack-relative-relocs"], .when(platforms: [.linux], configuration: .release))
    ]
}()

let package = Package(
    name: "Pushgate",
    platforms: [.macOS(.v14)],
    products: [
        .executable(name: "pushgate", targets: ["PushgateCLI"]),
        .library(name: "Pushgate", targets: ["Pushgate"]),
        .library(name: "PushgateXML", targets: ["PushgateXML"]),
        .library(name: "PushgateConfig", targets: ["PushgateConfig"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.3"),
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.37.6"),
        .package(url: "https://github.com/apple/swift-nio-http2", from: "1.46.0"),
        .package(url: "https://github.com/apple/swift-nio-extras", from: "1.35.2"),
        .package(url: "https://github.com/apple/swift-certificates", from: "1.21.1"),
        .package(url: "https://github.com/apple/swift-asn1", from: "1.7.4"),
        .package(url: "https://github.com/apple/swift-crypto", from: "4.5.2"),
        .package(url: "https://github.com/vapor/jwt-kit", from: "5.8.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
        .package(url: "https://github.com/vapor/postgres-nio", from: "1.33.2"),
        .package(url: "https://github.com/apple/swift-distributed-tracing", from: "1.7.3"),
        // OTLP over HTTP only: the default traits would add the gRPC exporter and grpc-swift.
        .package(url: "https://github.com/swift-otel/swift-otel", from: "1.6.0", traits: ["OTLPHTTP"]),
    ],
    targets: [
        // C libraries: a module map plus `static inline` shims, nothing else.
        // libcurl's headers and library are on the default paths. Its pkg-config file (8.14 from
        // bookworm-backports) adds `-isystem /usr/include/mit-krb5`, which SwiftPM refuses with a
        // warning, so it is not consulted; scripts/setup.sh installs the right libcurl.
        .systemLibrary(
            name: "CCurl",
            providers: [.apt(["libcurl4-openssl-dev"])]
        ),
        // posix_spawn's GNU extensions, for PushgateTesting's ChildProcess.
        .systemLibrary(name: "CSpawn"),
        .systemLibrary(
            name: "CSQLite",
            pkgConfig: "sqlite3",
            providers: [.apt(["libsqlite3-dev"])]
        ),
        .systemLibrary(
            name: "CLibXML2",
            pkgConfig: "libxml-2.0",
            providers: [.apt(["libxml2-dev"])]
        ),

        // The pure domain: platforms, registrations, tags, templates, outcomes, configuration model.
        .target(name: "Pushgate"),
        // libxml2: XML templates and XML results.
        .target(name: "PushgateXML", dependencies: ["Pushgate", "CLibXML2"]),
        // libcurl: the HTTP client (knows nothing about push).
        .target(name: "PushgateCurl", dependencies: ["CCurl"]),
        // Providers, token managers and the dispatcher: rendered payloads in, unified results out.
        .target(
            name: "PushgateDispatch",
            dependencies: [
                "Pushgate", "PushgateCurl",
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
            ]
        ),
        // What the SQL stores share: bound values, the tag query (tag expressions as index walks),
        // stored columns read back. No database driver.
        .target(name: "PushgateSQL", dependencies: ["Pushgate"]),
        // The SQLite store (registrations, secure messages, the outbox): the embedded default.
        .target(name: "PushgateSQLite", dependencies: ["Pushgate", "PushgateSQL", "CSQLite"]),
        // The PostgreSQL store: the same stores on postgres-nio, shared by several instances.
        .target(
            name: "PushgatePostgres",
            dependencies: [
                "Pushgate", "PushgateSQL",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        // The outbox's drive: its decisions as a value (OutboxDrive), the driver that performs them
        // over any outbox store (durable, or one send's ephemeral outbox), the delivery service.
        .target(
            name: "PushgateOutbox",
            dependencies: [
                "Pushgate", "PushgateDispatch", "PushgateXML",
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
            ]
        ),
        // The gateway both APIs share (a `Gateway` per app), framework-free (no Hummingbird, no HTTP status): registrations,
        // sends, secure push, telemetry and cancel with their rules and typed errors, on the
        // outbox (`PushgateOutbox` drives and delivers); the gateway's metrics.
        .target(
            name: "PushgateGateway",
            dependencies: [
                "Pushgate", "PushgateXML", "PushgateDispatch", "PushgateOutbox",
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // Outcome webhooks' poster: signed, batched POSTs of stored events through libcurl, retried
        // and parked, as a ServiceLifecycle service.
        .target(
            name: "PushgateWebhooks",
            dependencies: [
                "Pushgate", "PushgateCurl", "PushgateDispatch",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        // The Hummingbird application: the tutorials' app-backend API and the Notification Hubs
        // API, each mapping the core's errors once; authentication, the listener, composition.
        .target(
            name: "PushgateServer",
            dependencies: [
                "Pushgate", "PushgateGateway", "PushgateOutbox", "PushgateXML", "PushgateConfig", "PushgateDispatch",
                "PushgateCurl", "PushgateWebhooks",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "HummingbirdHTTP2", package: "hummingbird"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOTLS", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                // The HTTP/1 parser's errors and response encoder (UnsupportedMethodHandler).
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "CryptoExtras", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
                .product(name: "OTel", package: "swift-otel"),
            ],
            resources: [.embedInCode("Console/console.html"), .embedInCode("OpenAPI/openapi.json")]
        ),
        // The sandbox and a gateway against it on this machine: `pushgate demo` and the tests.
        .target(
            name: "PushgateLocal",
            dependencies: [
                "Pushgate", "PushgateConfig", "PushgateGateway", "PushgateCurl", "PushgateDispatch", "PushgateServer", "PushgateSQLite",
                "PNSSandbox",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // The test kit shared by the test targets: a sandbox-backed gateway fixture, raw sockets for
        // hostile clients, the `pushgate` process runner, registration seeds.
        .target(
            name: "PushgateTesting",
            dependencies: [
                "Pushgate", "PushgateConfig", "PushgateGateway", "PushgateCurl", "PushgateDispatch", "PushgateLocal", "PushgateServer",
                "PushgateSQLite", "PushgateWebhooks",
                "PNSSandbox", "CSpawn",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "HummingbirdTLS", package: "hummingbird"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // Reads config.json, template files and secrets from disk and the environment.
        .target(name: "PushgateConfig", dependencies: ["Pushgate", "PushgateXML"]),
        // Local APNs, FCM (v1 and legacy) and WNS emulators speaking the real wire protocols.
        .target(
            name: "PNSSandbox",
            dependencies: [
                "Pushgate", "PushgateXML",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOTLS", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
                .product(name: "NIOHPACK", package: "swift-nio-http2"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "CryptoExtras", package: "swift-crypto"),
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        .executableTarget(
            name: "PushgateCLI",
            dependencies: [
                "Pushgate", "PushgateXML", "PushgateConfig", "PushgateCurl", "PNSSandbox", "PushgateDispatch", "PushgateServer",
                "PushgateSQLite", "PushgatePostgres", "PushgateLocal", "PushgateGateway",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
            ],
            linkerSettings: releaseLink
        ),

        .testTarget(name: "PushgateTests", dependencies: ["Pushgate"]),
        .testTarget(name: "PushgateXMLTests", dependencies: ["Pushgate", "PushgateXML"]),
        .testTarget(name: "PushgateCurlTests", dependencies: ["PushgateCurl"]),
        .testTarget(
            name: "PushgateStoreTests",
            dependencies: [
                "PushgateSQLite", "PushgatePostgres", "PushgateSQL", "Pushgate",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]),
        .testTarget(
            name: "PushgateServerTests",
            dependencies: [
                "PushgateServer", "PushgateGateway", "PNSSandbox", "PushgateCurl", "PushgateConfig", "PushgateDispatch", "PushgateSQLite",
                "Pushgate", "PushgateXML",
                "PushgateLocal", "PushgateTesting",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "NIOEmbedded", package: "swift-nio"), .product(name: "NIOTLS", package: "swift-nio"),
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
        .testTarget(
            name: "PushgateDispatchTests",
            dependencies: [
                "PushgateDispatch", "PNSSandbox", "PushgateCurl", "Pushgate", "PushgateTesting",
                .product(name: "Crypto", package: "swift-crypto"),
            ]),
        .testTarget(
            name: "PNSSandboxTests",
            dependencies: [
                "PNSSandbox", "PushgateCurl", "Pushgate", "PushgateTesting", .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "Logging", package: "swift-log"), .product(name: "CryptoExtras", package: "swift-crypto"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"), .product(name: "NIOHTTP2", package: "swift-nio-http2"),
            ]
        ),
        .testTarget(name: "PushgateConfigTests", dependencies: ["Pushgate", "PushgateConfig"]),
        .testTarget(
            name: "PushgateCLITests",
            dependencies: [
                "PushgateCLI", "PushgateGateway", "PushgateLocal", "PNSSandbox", "PushgateSQLite", "PushgatePostgres", "PushgateCurl",
                "PushgateDispatch", "Pushgate",
                "PushgateTesting",
            ]),
        .testTarget(
            name: "PushgateOutboxTests",
            dependencies: ["PushgateOutbox", "PushgateDispatch", "Pushgate", "PushgateTesting"]),
        .testTarget(
            name: "PushgateWebhooksTests",
            dependencies: [
                "PushgateWebhooks", "Pushgate", "PushgateSQLite", "PushgatePostgres", "PushgateTesting", "PushgateServer", "PushgateLocal",
                "PushgateConfig", "PNSSandbox",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]),
        .testTarget(name: "PushgateConsoleTests", dependencies: ["PushgateLocal", "PNSSandbox", "Pushgate", "PushgateTesting"]),
    ],
    swiftLanguageModes: [.v6]
)

// Micro-benchmarks (ordo-one/benchmark) are opt-in so the normal build never resolves or compiles
// them: PUSHGATE_BENCHMARKS=1 swift package --scratch-path .build-bench benchmark
if Context.environment["PUSHGATE_BENCHMARKS"] != nil {
    package.dependencies.append(
        .package(url: "https://github.com/ordo-one/benchmark", from: "1.38.1", traits: ["MallocInterposer"]))
    package.targets.append(
        .executableTarget(
            name: "PushgateBenchmarks",
            dependencies: ["Pushgate", "PushgateXML", .product(name: "Benchmark", package: "benchmark")],
            path: "Benchmarks/PushgateBenchmarks",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ))
}
