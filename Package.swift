// swift-tools-version: 6.2
import PackageDescription

let package = Package(
    name: "JobKit",
    platforms: [.macOS(.v14), .iOS(.v17), .tvOS(.v17), .watchOS(.v10)],
    products: [
        .library(name: "JobKit", targets: ["JobKit"]),
        .library(name: "JobKitTesting", targets: ["JobKitTesting"]),
        .library(name: "JobKitNetworking", targets: ["JobKitNetworking"]),
        .library(name: "JobKitServer", targets: ["JobKitServer"]),
        .library(name: "JobKitCombine", targets: ["JobKitCombine"]),
        .library(name: "JobKitTracing", targets: ["JobKitTracing"]),
        .executable(name: "jobkit", targets: ["JobKitCLI"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        // The `Hummingbird` product only (not HummingbirdTesting, which would build async-http-client).
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.1"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        // Already in the graph through Hummingbird: NIOHTTPTypes names the HTTP parts a channel handler sees.
        .package(url: "https://github.com/apple/swift-nio-extras.git", from: "1.35.2"),
        // The downloads' HTTP client (SwiftNIO): 3-4x faster than FoundationNetworking on Linux, with
        // backpressure; FoundationNetworking stays for TransferClient's jobs (measured in BENCHMARKS.md).
        .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.37.0"),
        // `DownloadManager.Configuration.tlsConfiguration` and `jobkit download --ca-certificate`: the TLS
        // configuration of the manager's AsyncHTTPClient. Already in the graph through AsyncHTTPClient.
        .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.37.6"),
        // SHA-256 for `DownloadManager`'s checksums: CryptoKit on Apple platforms, BoringSSL elsewhere.
        .package(url: "https://github.com/apple/swift-crypto.git", from: "3.12.3"),
        // `JobKitCombine` on platforms without Combine: the same API (only its core module; the publishers
        // deliver on a `DispatchQueue` themselves, so OpenCombineDispatch's schedulers are not needed).
        .package(url: "https://github.com/OpenCombine/OpenCombine.git", from: "0.14.0"),
        // `JobKitTracing`: runs as spans of the installed `Tracer`. Already in the graph through
        // AsyncHTTPClient; the in-memory tracer (`InMemoryTracing`) is for the tests only.
        .package(url: "https://github.com/apple/swift-distributed-tracing.git", from: "1.7.3"),
        // Logging for `DownloadManager`, the transports and `jobkit` (`Logger`, `StreamLogHandler`).
        // Already in the graph through AsyncHTTPClient.
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        // `DownloadManager`'s byte counts, taken without its lock on every body chunk. Already in the
        // graph through SwiftNIO.
        .package(url: "https://github.com/apple/swift-atomics.git", from: "1.3.0"),
        // Build-time only: `swift package generate-documentation` (the DocC catalogs in Sources/*/*.docc).
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0"),
    ],
    targets: [
        // A 4-byte futex mutex for Linux (glibc's pthread_mutex_t is 40 bytes, and the standard
        // library's Mutex is invisible to the thread sanitizer); empty on Apple platforms.
        .target(name: "CJobKitLock"),
        // `renameat2(RENAME_NOREPLACE)` (Linux) and `renameatx_np(RENAME_EXCL)` (Apple platforms), which
        // the Swift overlays do not expose: a finished download never replaces a file that appeared.
        .target(name: "CJobKitFiles"),
        .target(name: "JobKit", dependencies: ["CJobKitLock"]),
        .target(name: "JobKitTesting", dependencies: ["JobKit"]),
        .target(
            name: "JobKitNetworking",
            dependencies: [
                "JobKit",
                "CJobKitFiles",
                "JobKitTracing",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Atomics", package: "swift-atomics"),
            ]),
        .target(
            name: "JobKitServer",
            dependencies: [
                "JobKit",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]),
        .target(
            name: "JobKitCombine",
            dependencies: [
                "JobKit",
                .product(
                    name: "OpenCombine", package: "OpenCombine",
                    condition: .when(platforms: [.linux, .android, .windows, .wasi, .openbsd])),
            ]),
        .target(
            name: "JobKitTracing",
            dependencies: ["JobKit", .product(name: "Tracing", package: "swift-distributed-tracing")]),
        .executableTarget(
            name: "JobKitCLI",
            dependencies: [
                "JobKit",
                "JobKitNetworking",
                "JobKitServer",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // What the test targets share: one process harness, `eventually`, scratch folders, the scripted
        // HTTP server. The processes the tests measure and kill are snippets (Snippets/): SwiftPM makes an
        // executable product of every executable target of a root package, and snippets are none.
        .target(name: "JobKitTestSupport", dependencies: ["JobKit"], path: "Tests/JobKitTestSupport"),
        .testTarget(name: "JobKitTests", dependencies: ["JobKit", "JobKitTesting", "JobKitTestSupport"]),
        .testTarget(name: "JobKitServerTests", dependencies: ["JobKitServer", "JobKitTestSupport"]),
        .testTarget(
            name: "JobKitNetworkingTests",
            dependencies: [
                "JobKitNetworking", "JobKitServer", "JobKitTesting", "JobKitTestSupport",
                .product(name: "InMemoryTracing", package: "swift-distributed-tracing"),
                .product(name: "Logging", package: "swift-log"),
            ]),
        .testTarget(name: "JobKitCombineTests", dependencies: ["JobKitCombine", "JobKitTestSupport"]),
        .testTarget(
            name: "JobKitTracingTests",
            dependencies: [
                "JobKitTracing", "JobKitTestSupport",
                .product(name: "InMemoryTracing", package: "swift-distributed-tracing"),
            ]),
        // The seeds' screens as a Swift 6 app writes them: the main actor is the target's default isolation
        // (as in a new Xcode 26 app target), so every class is a main-actor class with no annotation.
        .testTarget(
            name: "JobKitMainActorTests",
            dependencies: ["JobKit", "JobKitNetworking", "JobKitCombine", "JobKitTestSupport"],
            swiftSettings: [.defaultIsolation(MainActor.self)]),
        .testTarget(
            name: "JobKitCLITests",
            dependencies: ["JobKitCLI", "JobKitNetworking", "JobKitServer", "JobKitTestSupport"]),
    ],
    swiftLanguageModes: [.v6]
)

// CI's thread-sanitized run (`.ci/run`) sets JOBKIT_THREAD_SANITIZER=1 and builds in the plain build's
// folder with the plain build's flags: only JobKit's own targets are compiled again, instrumented and
// with line tables for the reports' file and line (full debug information cost 6% more processor time
// and gave the same reports), while the packages it depends on keep their plain objects
// (`swift build --sanitize=thread` would compile every one of them again: 450 of a clean sanitized
// build's 680 processor-seconds). The sanitizer then sees every access of JobKit's code and every lock,
// queue and thread of the system (it intercepts them in any code), not the memory accesses inside
// SwiftNIO, AsyncHTTPClient, Hummingbird or BoringSSL, which their own sanitized runs cover.
if Context.environment["JOBKIT_THREAD_SANITIZER"] == "1" {
    for target in package.targets where target.type != .binary && target.type != .plugin && target.type != .system {
        target.swiftSettings =
            (target.swiftSettings ?? []) + [.unsafeFlags(["-sanitize=thread", "-gline-tables-only"])]
        target.cSettings = (target.cSettings ?? []) + [.unsafeFlags(["-fsanitize=thread", "-gline-tables-only"])]
        target.linkerSettings = (target.linkerSettings ?? []) + [.unsafeFlags(["-sanitize=thread"])]
    }
}
