// swift-tools-version: 6.1
import PackageDescription

// The core's tests on the safe path: JobKit built with `JOBKIT_SAFE_RUNTIME`, so that none of its
// unsafe tricks (Sources/JobKit/Runtime/Unsafe/) is compiled in. The targets are the main package's
// own folders, linked here (Sources/, Tests/, Snippets/): this package builds the core, its lock,
// JobKitTesting, the shared test support, the core's tests and the probe they launch — none of the
// networking stack — in its own scratch path. `.ci/run` runs it once. `JOBKIT_SAFE_RUNTIME=0` in the environment builds the unsafe path
// instead (as the main package does): a quick check of both without the networking stack.
let safeRuntime: [SwiftSetting] =
    Context.environment["JOBKIT_SAFE_RUNTIME"] == "0" ? [] : [.define("JOBKIT_SAFE_RUNTIME")]

let package = Package(
    name: "JobKitSafeRuntime",
    platforms: [.macOS(.v14), .iOS(.v17), .tvOS(.v17), .watchOS(.v10)],
    // A library product, as in the main package, for the probe the tests launch (Snippets/JobKitProbe).
    products: [.library(name: "JobKit", targets: ["JobKit"])],
    targets: [
        .target(name: "CJobKitLock"),
        .target(name: "JobKit", dependencies: ["CJobKitLock"], swiftSettings: safeRuntime),
        .target(name: "JobKitTesting", dependencies: ["JobKit"], swiftSettings: safeRuntime),
        .target(
            name: "JobKitTestSupport", dependencies: ["JobKit"], path: "Tests/JobKitTestSupport",
            swiftSettings: safeRuntime),
        .testTarget(
            name: "JobKitTests", dependencies: ["JobKit", "JobKitTesting", "JobKitTestSupport"],
            swiftSettings: safeRuntime),
    ],
    swiftLanguageModes: [.v6]
)
