// swift-tools-version: 6.1
import PackageDescription

let package = Package(
    name: "JobKit",
    platforms: [.macOS(.v14), .iOS(.v17), .tvOS(.v17), .watchOS(.v10)],
    products: [
        .library(name: "JobKit", targets: ["JobKit"]),
        .library(name: "JobKitTesting", targets: ["JobKitTesting"]),
        .executable(name: "jobkit", targets: ["JobKitCLI"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2")
    ],
    targets: [
        .target(name: "JobKit"),
        .target(name: "JobKitTesting", dependencies: ["JobKit"]),
        .executableTarget(
            name: "JobKitCLI",
            dependencies: [
                "JobKit",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        .executableTarget(name: "JobKitWatchdogProbe", dependencies: ["JobKit"]),
        // The executables are dependencies so that they are built for the end-to-end tests that launch them.
        .testTarget(
            name: "JobKitTests", dependencies: ["JobKit", "JobKitTesting", "JobKitWatchdogProbe", "JobKitCLI"]),
    ],
    swiftLanguageModes: [.v6]
)
