// swift-tools-version: 6.1
import PackageDescription

let package = Package(
    name: "JobKit",
    platforms: [.macOS(.v14), .iOS(.v17), .tvOS(.v17), .watchOS(.v10)],
    products: [
        .library(name: "JobKit", targets: ["JobKit"]),
        .library(name: "JobKitTesting", targets: ["JobKitTesting"]),
        .library(name: "JobKitNetworking", targets: ["JobKitNetworking"]),
        .library(name: "JobKitServer", targets: ["JobKitServer"]),
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
        // SHA-256 for `DownloadManager`'s checksums: CryptoKit on Apple platforms, BoringSSL elsewhere.
        .package(url: "https://github.com/apple/swift-crypto.git", from: "3.12.3"),
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
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
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
        .executableTarget(
            name: "JobKitCLI",
            dependencies: [
                "JobKit",
                "JobKitNetworking",
                "JobKitServer",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        // `jobkit` is a dependency so that it is built for the end-to-end tests that launch it — also as
        // `jobkit _probe …`, the hidden test subject of the watchdog, thread-count and timer-memory tests.
        // `JobKitServer` too, for the tests of `jobkit publish` that script the server's faults in process.
        .testTarget(name: "JobKitTests", dependencies: ["JobKit", "JobKitTesting", "JobKitCLI", "JobKitServer"]),
        .testTarget(name: "JobKitServerTests", dependencies: ["JobKitServer"]),
        // `jobkit` is built for the tests that `kill -9` a download manager (`jobkit _probe download-manager`).
        .testTarget(
            name: "JobKitNetworkingTests",
            dependencies: ["JobKitNetworking", "JobKitServer", "JobKitTesting", "JobKitCLI"]),
    ],
    swiftLanguageModes: [.v6]
)
