import Foundation
import JobKitTestSupport
import Testing

@testable import JobKitNetworking

/// An item's connections as the scheduler's slots: what a run takes, what `connectionsUsed` gives
/// back, in the state machine alone.
extension DownloadManagerStateMachineTests {
    func request(_ path: String, host: String = "a.example", connections: Int) -> DownloadManager.Request {
        .init(url: URL(string: "https://\(host)/\(path)")!, connections: connections)
    }

    /// The slots each running item holds, by name.
    func slots(_ machine: Machine) -> [String: Int] {
        var slots: [String: Int] = [:]
        for id in machine.ids {
            guard let entry = machine.items[id], case .running(let run) = entry.phase else { continue }
            slots[entry.name] = run.slots
        }
        return slots
    }

    @Test func aRunThatUsesOneConnectionGivesBackTheOtherSlotsAndPendingItemsStartInThem() throws {
        var machine = machine(limit: 4)
        let (ids, added) = try add((0..<4).map { request("f\($0)", connections: 4) }, to: &machine)
        #expect(added.starts.map(\.name) == ["f0"])
        #expect(added.starts.map(\.connections) == [4], "the first item takes every slot")

        // f0 learns it will not split: it keeps one slot, f1 starts in the three others; and so on.
        var starts = added.starts
        for (index, taken) in [3, 2, 1].enumerated() {
            let run = starts[index]
            let used = machine.connectionsUsed(run.id, generation: run.generation, count: 1, now: 1)
            #expect(used.starts.map(\.name) == ["f\(index + 1)"])
            #expect(used.starts.map(\.connections) == [taken], "each takes what is free when it starts")
            starts += used.starts
        }
        let last = machine.connectionsUsed(ids[3], generation: starts[3].generation, count: 1, now: 1)
        #expect(last.starts.isEmpty)
        #expect(machine.scheduler.runningCount == 4, "four at once, one slot each")
        #expect(machine.scheduler.running(on: "a.example") == 4)
        #expect(slots(machine) == ["f0": 1, "f1": 1, "f2": 1, "f3": 1])
    }

    @Test func aSplitIntoFewerRangesKeepsThatManySlots() throws {
        var machine = machine(limit: 8)
        let (ids, added) = try add([request("big", connections: 8), request("next", connections: 8)], to: &machine)
        #expect(added.starts.map(\.name) == ["big"])

        let used = machine.connectionsUsed(ids[0], generation: added.starts[0].generation, count: 3, now: 1)
        #expect(used.starts.map(\.name) == ["next"])
        #expect(used.starts.map(\.connections) == [5])
        #expect(slots(machine) == ["big": 3, "next": 5])
        #expect(machine.scheduler.runningCount == 8)
    }

    @Test func connectionsUsedOnlyLowersAndIgnoresAStaleRun() throws {
        var machine = machine(limit: 4)
        let (ids, added) = try add([request("a", connections: 4), request("b", connections: 4)], to: &machine)
        let generation = added.starts[0].generation

        let same = machine.connectionsUsed(ids[0], generation: generation, count: 4, now: 1)
        let more = machine.connectionsUsed(ids[0], generation: generation, count: 9, now: 1)
        let stale = machine.connectionsUsed(ids[0], generation: generation + 100, count: 1, now: 1)
        let pending = machine.connectionsUsed(ids[1], generation: generation, count: 1, now: 1)
        for actions in [same, more, stale, pending] { #expect(actions.starts.isEmpty) }
        #expect(slots(machine) == ["a": 4])
        #expect(machine.scheduler.runningCount == 4)

        // Zero counts as one: a run always keeps a slot.
        let zero = machine.connectionsUsed(ids[0], generation: generation, count: 0, now: 2)
        #expect(zero.starts.map(\.name) == ["b"])
        #expect(slots(machine) == ["a": 1, "b": 3])

        // A run that ended (a new one of the same item) is stale: its reports change nothing.
        _ = try machine.suspend(ids[0], now: 3)
        _ = machine.runEnded(ids[0], generation: generation, .cancelled, now: 3)
        let late = machine.connectionsUsed(ids[0], generation: generation, count: 1, now: 4)
        #expect(late.starts.isEmpty)
        #expect(slots(machine)["a"] == nil)
    }

    @Test func slotsGivenBackThenTheRunEndingLeaveNoCountBehind() throws {
        var machine = machine(limit: 6, perHost: 4)
        let requests = [
            request("a0", connections: 4), request("a1", connections: 4),
            request("b0", host: "b.example", connections: 4),
        ]
        let (ids, added) = try add(requests, to: &machine)
        #expect(added.starts.map(\.name) == ["a0", "b0"])
        #expect(added.starts.map(\.connections) == [4, 2], "a0 fills its host, b0 takes what is left")
        #expect(machine.scheduler.running(on: "a.example") == 4 && machine.scheduler.running(on: "b.example") == 2)

        // a0 gives back 3: a1 takes 3 of a's host (the limit of 4 on it), within the total of 6.
        let used = machine.connectionsUsed(ids[0], generation: added.starts[0].generation, count: 1, now: 1)
        #expect(used.starts.map(\.name) == ["a1"])
        #expect(used.starts.map(\.connections) == [3])
        #expect(machine.scheduler.running(on: "a.example") == 4 && machine.scheduler.runningCount == 6)

        // Every run ends: the counts are back to 0, on every host.
        for start in added.starts + used.starts {
            let ended = machine.runEnded(start.id, generation: start.generation, .completed, now: 2)
            #expect(ended.starts.isEmpty)
        }
        #expect(machine.scheduler.runningCount == 0 && machine.scheduler.activeCount == 0)
        #expect(machine.scheduler.running(on: "a.example") == 0 && machine.scheduler.running(on: "b.example") == 0)
    }

    @Test(arguments: 0..<10) func randomReleasesKeepTheSchedulersCountsExact(seed: UInt64) throws {
        var random = Generator(state: seed)
        var machine = machine(limit: 5, perHost: 3)
        var runs: [(id: ItemID, generation: UInt64)] = []
        let hosts = ["a.example", "b.example"]
        /// The scheduler counts exactly the slots the running items hold, and never more than the limits.
        func check() {
            var total = 0
            var byHost: [String: Int] = [:]
            for id in machine.ids {
                guard let entry = machine.items[id], case .running(let run) = entry.phase else { continue }
                #expect(run.slots >= 1)
                total += run.slots
                byHost[entry.host, default: 0] += run.slots
            }
            #expect(machine.scheduler.runningCount == total && total <= 5)
            for host in hosts {
                #expect(machine.scheduler.running(on: host) == byHost[host, default: 0])
                #expect(byHost[host, default: 0] <= 3)
            }
        }
        for step in 0..<1_000 {
            let now = UInt64(step)
            var actions = Machine.Actions()
            let ids = machine.ids
            switch random.next(5) {
            case 0:
                let path = "f\(step)"
                let host = hosts[random.next(hosts.count)]
                actions = try add([request(path, host: host, connections: 1 + random.next(4))], to: &machine).actions
            case 1 where !runs.isEmpty, 2 where !runs.isEmpty:
                let run = runs[random.next(runs.count)]
                actions = machine.connectionsUsed(run.id, generation: run.generation, count: random.next(4), now: now)
            case 3 where !runs.isEmpty:
                let run = runs.remove(at: random.next(runs.count))
                actions = machine.runEnded(run.id, generation: run.generation, .completed, now: now)
            case 4 where !ids.isEmpty:
                actions = try machine.suspend(ids[random.next(ids.count)], now: now)
            default:
                continue
            }
            runs += actions.starts.map { ($0.id, $0.generation) }
            check()
        }
        while let run = runs.popLast() {
            runs += machine.runEnded(run.id, generation: run.generation, .completed, now: 2_000).starts.map {
                ($0.id, $0.generation)
            }
            check()
        }
        #expect(machine.scheduler.runningCount == 0)
        for host in hosts { #expect(machine.scheduler.running(on: host) == 0) }
    }
}
