import Foundation
import JobKitTestSupport
import Testing

@testable import JobKitNetworking

/// The state machine's components kept in step: random controls, run ends and cleanups, checked
/// after every step.
extension DownloadManagerStateMachineTests {
    /// SplitMix64: the same seed, the same steps.
    struct Generator {
        var state: UInt64
        mutating func next(_ bound: Int) -> Int {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return Int((z ^ (z >> 31)) % UInt64(bound))
        }
    }

    /// What the executor would do with a transition's actions: the runs it starts report their end
    /// later, the names it cleans are released later.
    struct Executor {
        var runs: [(id: ItemID, generation: UInt64)] = []
        var cleaning: [String] = []

        mutating func take(_ actions: Machine.Actions) {
            runs += actions.starts.map { ($0.id, $0.generation) }
            cleaning += actions.cleaning
        }
    }

    /// The counts of the scheduler match the items' phases; no host runs more than its limit; no run
    /// starts while its name is held.
    func checkInvariants(_ machine: Machine, perHost: Int, started: [Machine.Start]) {
        var pending = 0
        var running = 0
        var byHost: [String: Int] = [:]
        for id in machine.ids {
            switch machine.items[id]?.phase {
            case .pending: pending += 1
            case .running:
                running += 1
                byHost[machine.items[id]!.host, default: 0] += 1
            default: break
            }
        }
        #expect(machine.scheduler.pendingCount == pending && machine.scheduler.runningCount == running)
        #expect(byHost.values.allSatisfy { $0 <= perHost })
        for start in started { #expect(!machine.isCleaning(start.name), "\(start.name) started while held") }
    }

    @Test(arguments: 0..<20) func randomControlsKeepTheComponentsInStep(seed: UInt64) throws {
        var random = Generator(state: seed)
        var machine = machine(limit: 3, perHost: 2)
        var executor = Executor()
        let names = (0..<6).map { "f\($0)" }
        let hosts = ["a.example", "b.example"]
        for step in 0..<2_000 {
            let now = UInt64(step)
            var actions = Machine.Actions()
            let ids = machine.ids
            switch random.next(8) {
            case 0:
                let index = random.next(names.count)
                if let prepared = try? machine.prepare([request(names[index], host: hosts[index % 2])]) {
                    actions = machine.commit(prepared, now: now).actions
                }
            case 1 where !ids.isEmpty: actions = try machine.suspend(ids[random.next(ids.count)], now: now)
            case 2 where !ids.isEmpty: actions = try machine.resume(ids[random.next(ids.count)], now: now)
            case 3 where !ids.isEmpty: actions = try machine.cancel(ids[random.next(ids.count)], now: now)
            case 4 where !ids.isEmpty:
                actions = try machine.remove(ids[random.next(ids.count)], deletingFile: random.next(2) == 0, now: now)
            case 5 where !executor.runs.isEmpty, 6 where !executor.runs.isEmpty:
                let run = executor.runs.remove(at: random.next(executor.runs.count))
                if random.next(3) == 0 { _ = machine.finishing(run.id, generation: run.generation, size: 1) }
                let outcomes: [Machine.Outcome] = [
                    .completed, .cancelled, .failed(.init(kind: .network, message: "reset")),
                    .failed(.init(kind: .checksumMismatch, message: "digest")),
                ]
                actions = machine.runEnded(
                    run.id, generation: run.generation, outcomes[random.next(outcomes.count)], now: now)
            case 7 where !executor.cleaning.isEmpty:
                let name = executor.cleaning.remove(at: random.next(executor.cleaning.count))
                actions = machine.cleaned([name], now: now)
            default:
                continue
            }
            executor.take(actions)
            checkInvariants(machine, perHost: 2, started: actions.starts)
        }
        // Every run ends and every cleanup is done: nothing is held, the pending items ran.
        var rounds = 0
        while !executor.runs.isEmpty || !executor.cleaning.isEmpty, rounds < 10_000 {
            rounds += 1
            var actions = Machine.Actions()
            if let run = executor.runs.popLast() {
                actions = machine.runEnded(run.id, generation: run.generation, .completed, now: 3_000)
            } else {
                actions = machine.cleaned([executor.cleaning.removeLast()], now: 3_000)
            }
            executor.take(actions)
            checkInvariants(machine, perHost: 2, started: actions.starts)
        }
        #expect(machine.nameGuard.isEmpty && machine.nameGuard.stoppedRunCount == 0)
        #expect(machine.scheduler.activeCount == 0)
    }
}
