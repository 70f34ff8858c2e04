import Foundation
import Testing

@testable import JobKitNetworking

/// The download manager under a deterministic simulation: each schedule's seed drives a server that
/// lies, a disk that fails, controls at random moments, kills, power losses and restarts, and the
/// order of every callback (see `DownloadManagerSimulation`). `JOBKIT_SIMULATION_SEED` and
/// `JOBKIT_SIMULATION_SCHEDULES` set the first seed and the count (schedule `i` has seed `SEED + i`,
/// so a failing one replays alone with its own seed and a count of 1); `JOBKIT_SIMULATION_STOP=1`
/// stops at the first violation, `JOBKIT_SIMULATION_ZERO_FILL=1` lets a power loss zero-fill unsynced
/// bytes. It prints `simulated N schedules (seed S): K kills, F injected faults, V invariant
/// violations` (power losses count as kills), then how many kills were power losses.
@Suite struct DownloadManagerSimulationTests {
    static let seed =
        ProcessInfo.processInfo.environment["JOBKIT_SIMULATION_SEED"].flatMap { UInt64($0) }
        ?? UInt64.random(in: 0..<1 << 32)
    static let schedules =
        ProcessInfo.processInfo.environment["JOBKIT_SIMULATION_SCHEDULES"].flatMap { Int($0) }
        ?? 20_000
    /// `JOBKIT_SIMULATION_STOP=1`: stop at the first violation (to see quickly whether a defect is caught).
    static let stopsAtFirst = ProcessInfo.processInfo.environment["JOBKIT_SIMULATION_STOP"] == "1"

    @Test func everyScheduleKeepsTheInvariants() async {
        // Tens of seconds of work: on a thread of its own, not one of the few the other tests'
        // tasks share.
        let (kills, powerLosses, faults, violations, first) = await withCheckedContinuation { continuation in
            Thread.detachNewThread { continuation.resume(returning: Self.simulate()) }
        }
        print(
            "simulated \(Self.schedules) schedules (seed \(Self.seed)): \(kills) kills, \(faults) injected faults, "
                + "\(violations.count) invariant violations")
        print("of the kills, \(powerLosses) were power losses")
        if let first { print("the first violation came with schedule \(first)") }
        for violation in violations.prefix(3) { Issue.record("\(violation)") }
    }

    private static func simulate() -> (Int, Int, Int, [DownloadManagerSimulation.Violation], Int?) {
        var kills = 0
        var powerLosses = 0
        var faults = 0
        var violations: [DownloadManagerSimulation.Violation] = []
        var first: Int?
        for index in 0..<max(schedules, 0) {
            var simulation = DownloadManagerSimulation(seed: seed &+ UInt64(index))
            do {
                try simulation.run(steps: 60)
            } catch {
                violations.append(error)
                first = first ?? index + 1
                if stopsAtFirst { break }
            }
            kills += simulation.kills
            powerLosses += simulation.powerLosses
            faults += simulation.injectedFaults
        }
        return (kills, powerLosses, faults, violations, first)
    }
}
