import Dispatch
import JobKitTestSupport
import Testing

@testable import JobKit

@Suite struct JobGraphTests {
    /// A job that logs its start and end.
    private func step(_ name: String, _ log: Locked<[String]>, fails: Bool = false) -> Job<Void> {
        Job { controller in
            log.withLock { $0.append("start \(name)") }
            controller.queue.asyncAfter(deadline: .now() + .milliseconds(1)) {
                log.withLock { $0.append("end \(name)") }
                fails ? controller.fail(with: TestError(id: 0)) : controller.finish()
            }
        }
    }

    private func index(_ entry: String, in log: [String]) -> Int { log.firstIndex(of: entry)! }

    @Test func diamondRunsEachNodeAfterItsDependencies() async throws {
        let log = Locked<[String]>([])
        var graph = JobGraph<String>()
        try graph.add("top", step("top", log))
        try graph.add("left", dependsOn: ["top"], step("left", log))
        try graph.add("right", dependsOn: ["top"], step("right", log))
        try graph.add("bottom", dependsOn: ["left", "right"], step("bottom", log))
        let outcomes = try await graph.job(maxConcurrent: 2).value
        #expect(outcomes.values.allSatisfy(\.isFinished) && outcomes.count == 4)
        let entries = log.current
        #expect(index("end top", in: entries) < index("start left", in: entries))
        #expect(index("end top", in: entries) < index("start right", in: entries))
        #expect(index("end left", in: entries) < index("start bottom", in: entries))
        #expect(index("end right", in: entries) < index("start bottom", in: entries))
    }

    @Test func wideFanInWaitsForEveryDependencyWithinTheLimit() async throws {
        let log = Locked<[String]>([])
        let meter = InFlightMeter()
        var graph = JobGraph<Int>()
        for leaf in 0..<50 {
            try graph.add(
                leaf,
                Job { controller in
                    meter.enter()
                    controller.queue.asyncAfter(deadline: .now() + .milliseconds(1)) {
                        meter.leave()
                        log.withLock { $0.append("leaf") }
                        controller.finish()
                    }
                })
        }
        try graph.add(
            100, dependsOn: Array(0..<50),
            Job {
                log.withLock { $0.append("sink") }; $0.finish()
            })
        let outcomes = try await graph.job(maxConcurrent: 4).value
        #expect(outcomes.count == 51)
        #expect(log.current.last == "sink" && log.current.count == 51)
        #expect(meter.peak <= 4)
    }

    @Test func aFailureSkipsItsDependentsAndOthersGoOn() async throws {
        let log = Locked<[String]>([])
        var graph = JobGraph<String>()
        try graph.add("bad", step("bad", log, fails: true))
        try graph.add("child", dependsOn: ["bad"], step("child", log))
        try graph.add("grandchild", dependsOn: ["child"], step("grandchild", log))
        try graph.add("independent", step("independent", log))
        let outcomes = try await graph.job().value
        #expect(outcomes["bad"].map { if case .failed = $0 { true } else { false } } == true)
        #expect(outcomes["child"].map { if case .skipped = $0 { true } else { false } } == true)
        #expect(outcomes["grandchild"].map { if case .skipped = $0 { true } else { false } } == true)
        #expect(outcomes["independent"]?.isFinished == true)
        #expect(!log.current.contains("start child"))
    }

    @Test func stopAllCancelsRunningNodesAndSkipsTheRest() async throws {
        let log = Locked<[String]>([])
        var graph = JobGraph<String>()
        try graph.add("bad", step("bad", log, fails: true))
        try graph.add("slow", Job { controller in controller.onCancel { log.withLock { $0.append("cancel slow") } } })
        try graph.add("later", dependsOn: ["slow"], step("later", log))
        let outcomes = try await graph.job(policy: .stopAll).value
        #expect(outcomes["slow"].map { if case .cancelled = $0 { true } else { false } } == true)
        #expect(outcomes["later"].map { if case .skipped = $0 { true } else { false } } == true)
        #expect(log.current.contains("cancel slow"))
    }

    @Test func cyclesAndMissingDependenciesAreReportedBeforeAnythingRuns() throws {
        let log = Locked<[String]>([])
        var cyclic = JobGraph<String>()
        try cyclic.add("a", dependsOn: ["c"], step("a", log))
        try cyclic.add("b", dependsOn: ["a"], step("b", log))
        try cyclic.add("c", dependsOn: ["b"], step("c", log))
        #expect(throws: JobGraph<String>.GraphError.cycle(["a", "c", "b", "a"])) { try cyclic.job() }
        var missing = JobGraph<String>()
        try missing.add("a", dependsOn: ["ghost"], step("a", log))
        #expect(throws: JobGraph<String>.GraphError.missingDependency(node: "a", dependency: "ghost")) {
            try missing.job()
        }
        #expect(throws: JobGraph<String>.GraphError.duplicateNode("a")) { try missing.add("a", .empty) }
        #expect(log.current.isEmpty)
    }
}
