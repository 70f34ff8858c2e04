// swift-tools-version: 6.1
import Foundation
import PackageDescription

/// A path dependency's identity is its folder's name, which depends on where JobKit was cloned.
let jobKitPackage = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .lastPathComponent

let package = Package(
    name: "JobKitBenchmarks",
    platforms: [.macOS(.v14)],
    dependencies: [
        .package(path: ".."),
        .package(url: "https://github.com/ordo-one/benchmark", from: "1.38.1", traits: ["MallocInterposer"]),
    ],
    targets: [
        .executableTarget(
            name: "JobKitBenchmarks",
            dependencies: [
                .product(name: "JobKit", package: jobKitPackage),
                .product(name: "Benchmark", package: "benchmark"),
                "SeedDesign",
            ],
            path: "Benchmarks/JobKitBenchmarks",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
        // One workload per run, for `instructions.sh` and `pending-memory.sh` to measure. Not under
        // Benchmarks/: the benchmark plugin runs every executable there as a benchmark.
        .executableTarget(
            name: "JobKitInstructions",
            dependencies: [.product(name: "JobKit", package: jobKitPackage), "SeedDesign"],
            path: "Instructions/JobKitInstructions"
        ),
        // The seed articles' `Task` design, ported as the reference every benchmark compares against.
        .target(name: "SeedDesign", path: "Benchmarks/SeedDesign"),
        // Loopback download benchmarks (see Networking/run.sh): the same downloads through a plain
        // URLSession program and through JobKitNetworking, one binary, timed and measured alike.
        .executableTarget(
            name: "NetworkingBench",
            dependencies: [
                .product(name: "JobKit", package: jobKitPackage),
                .product(name: "JobKitNetworking", package: jobKitPackage),
            ],
            path: "Networking/NetworkingBench"
        ),
    ],
    swiftLanguageModes: [.v6]
)
