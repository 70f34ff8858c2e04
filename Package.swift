// swift-tools-version: 6.1
import PackageDescription

let package = Package(
    name: "JobKit",
    platforms: [.macOS(.v14), .iOS(.v17), .tvOS(.v17), .watchOS(.v10)],
    products: [
        .library(name: "JobKit", targets: ["JobKit"]),
        .executable(name: "jobkit", targets: ["JobKitCLI"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2")
    ],
    targets: [
        .target(name: "JobKit"),
        .executableTarget(
            name: "JobKitCLI",
            dependencies: [
                "JobKit",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        .testTarget(name: "JobKitTests", dependencies: ["JobKit"]),
    ],
    swiftLanguageModes: [.v6]
)
