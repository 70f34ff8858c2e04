import Foundation
import JobKitTestSupport
import Testing

@testable import JobKitNetworking

/// The real `DownloadManager` under a deterministic simulation (`DownloadManagerSimulation`): each
/// schedule's seed drives a server that lies, a disk that fails, controls at random moments, kills,
/// power losses and restarts, and the order of every callback, the transport's and the timers'.
/// `JOBKIT_SIMULATION_SEED` and `JOBKIT_SIMULATION_SCHEDULES` set the first seed and the count
/// (schedule `i` has seed `SEED + i`, so a failing one replays alone with its own seed and a count of
/// 1); `JOBKIT_SIMULATION_STOP=1` stops at the first violation; `JOBKIT_SIMULATION_REPLAY_LINES` sets
/// how many of the last moves a violation shows (40); `JOBKIT_SIMULATION_TRACE=1` prints every move.
/// It prints `simulated N schedules (seed S): K kills, F injected faults, V invariant violations`
/// (power losses count as kills), then how many kills were power losses.
@Suite struct DownloadManagerSimulationTests {
    static let seed =
        ProcessInfo.processInfo.environment["JOBKIT_SIMULATION_SEED"].flatMap { UInt64($0) }
        ?? UInt64.random(in: 0..<1 << 32)
    static let schedules =
        ProcessInfo.processInfo.environment["JOBKIT_SIMULATION_SCHEDULES"].flatMap { Int($0) }
        ?? 20_000
    /// `JOBKIT_SIMULATION_STOP=1`: stop at the first violation (to see quickly whether a defect is caught).
    static let stopsAtFirst = ProcessInfo.processInfo.environment["JOBKIT_SIMULATION_STOP"] == "1"

    /// What some schedules came to.
    struct Tally: Sendable {
        var kills = 0
        var powerLosses = 0
        var faults = 0
        /// By schedule index.
        var violations: [(index: Int, violation: DownloadManagerSimulation.Violation)] = []

        mutating func add(_ other: Tally) {
            kills += other.kills
            powerLosses += other.powerLosses
            faults += other.faults
            violations += other.violations
        }
    }

    @Test func everyScheduleKeepsTheInvariants() async {
        // Tens of seconds of work, shared among the processors: each worker is a thread of its own,
        // not one of the few the other tests' tasks share. Two per processor: a worker waits while its
        // schedule runs on the simulated process's queue, and at a schedule's start and end (measured on
        // two cores, 2,000 schedules of seed 1: 13.3 to 15.3 s with one per processor, 11.0 s with two).
        // Schedule `i` is the same whichever worker runs it, so the outcome does not depend on the
        // number of workers.
        let workers = max(1, min(ProcessInfo.processInfo.activeProcessorCount * 2, 8))
        let stop = Locked(false)
        let tally = await withTaskGroup(of: Tally.self) { group in
            for worker in 0..<workers {
                group.addTask {
                    await offThePool { Self.simulate(worker: worker, of: workers, stop: stop) }
                }
            }
            // A safety net, never the way it passes: the schedules after it are not started.
            let deadline = Task {
                guard (try? await Task.sleep(for: .seconds(900))) != nil else { return }
                stop.withLock { $0 = true }
                Issue.record("the simulation had not ended after 15 minutes: stopped")
            }
            var tally = Tally()
            for await part in group { tally.add(part) }
            deadline.cancel()
            return tally
        }
        let violations = tally.violations.sorted { $0.index < $1.index }
        print(
            "simulated \(Self.schedules) schedules (seed \(Self.seed)): \(tally.kills) kills, \(tally.faults) injected "
                + "faults, \(violations.count) invariant violations")
        print("of the kills, \(tally.powerLosses) were power losses")
        if let first = violations.first { print("the first violation came with schedule \(first.index + 1)") }
        for (_, violation) in violations.prefix(3) { Issue.record("\(violation)") }
    }

    @Test func theServersContentIsItsByteFormulaEightBytesAtATime() {
        for (url, version) in [("http://h0.example/f0.bin", 1), ("http://h1.example/f3.bin", 7)] {
            let content = SimulatedServer.content(url, version: version, length: 2_061)
            let hash = url.utf8.reduce(UInt64(version) &* 0x100_0000_01B3) { ($0 ^ UInt64($1)) &* 0x100_0000_01B3 }
            #expect(content == (0..<2_061).map { SimulatedServer.byte($0, of: hash) })
        }
    }

    private static func simulate(worker: Int, of workers: Int, stop: Locked<Bool>) -> Tally {
        var tally = Tally()
        for index in stride(from: worker, to: max(schedules, 0), by: workers) {
            if stop.current { break }
            let simulation = DownloadManagerSimulation(seed: seed &+ UInt64(index))
            do {
                try simulation.run(steps: 60)
            } catch {
                tally.violations.append((index, error))
                if stopsAtFirst { stop.withLock { $0 = true } }
            }
            tally.kills += simulation.kills
            tally.powerLosses += simulation.powerLosses
            tally.faults += simulation.injectedFaults
        }
        return tally
    }
}
