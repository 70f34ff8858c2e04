import Testing

@testable import JobKitNetworking

/// The consumers of `updates()` alone, with no dispatch and no continuation (waiters are numbers):
/// each starts from its snapshot, takes every event after it, and holds one snapshot at most.
@Suite struct UpdateBroadcastStateMachineTests {
    typealias Machine = UpdateBroadcastStateMachine<Int>

    /// An event that carries its sequence number (in `totals.received`).
    func event(_ number: Int) -> DownloadManager.Event {
        .allFinished(DownloadManager.Summary(items: [], totals: .init(received: Int64(number))))
    }

    func numbers(_ events: [DownloadManager.Event]) -> [Int] {
        events.map { event in
            guard case .allFinished(let summary) = event else { return -1 }
            return Int(summary.totals.received)
        }
    }

    /// An update whose snapshot is named by `snapshot` (in `totals.expected`).
    func update(_ events: [DownloadManager.Event], snapshot: Int64) -> DownloadManager.Update {
        DownloadManager.Update(events: events, items: [], totals: .init(expected: snapshot))
    }

    func subscribe(
        _ machine: inout Machine, snapshot: Int64 = 0,
        after cut: UpdateCut = .init(deliveriesBefore: 0, eventsBefore: 0)
    ) throws -> UInt64 {
        let id = machine.subscribe(initial: update([], snapshot: snapshot), after: cut)
        return try #require(id)
    }

    func delivery(_ number: UInt64, events: Range<Int>, final: Bool = false) -> UpdateDelivery {
        UpdateDelivery(
            update: update(events.map(event), snapshot: Int64(number)), number: number,
            firstEvent: UInt64(events.lowerBound), isFinal: final)
    }

    @Test func theFirstUpdateIsTheSnapshotThenOnlyTheEventsAfterIt() throws {
        var machine = Machine()
        // Two deliveries had begun and events 0..<5 were noted when the snapshot was taken.
        let id = try subscribe(&machine, snapshot: 100, after: .init(deliveriesBefore: 2, eventsBefore: 5))
        // Delivery 2 began before the snapshot: skipped whole (its snapshot is older).
        #expect(machine.deliver(delivery(2, events: 0..<3)).isEmpty)
        // Delivery 3 took events 3..<8: 3 and 4 were in the snapshot.
        #expect(machine.deliver(delivery(3, events: 3..<8)).isEmpty)
        guard case .deliver(let first) = machine.next(id, 1) else { Issue.record("no snapshot"); return }
        #expect(first.events.isEmpty && first.totals.expected == 100, "the snapshot, with no events")
        guard case .deliver(let second) = machine.next(id, 2) else { Issue.record("no events"); return }
        #expect(numbers(second.events) == [5, 6, 7])
        #expect(second.totals.expected == 3, "delivery 3's snapshot")
        guard case .wait = machine.next(id, 3) else { Issue.record("nothing is pending"); return }
    }

    @Test func aWaitingConsumerIsHandedTheDeliveryItself() throws {
        var machine = Machine()
        let id = try subscribe(&machine)
        guard case .deliver = machine.next(id, 1) else { Issue.record("no snapshot"); return }
        guard case .wait = machine.next(id, 2) else { Issue.record("must wait"); return }
        let resumes = machine.deliver(delivery(1, events: 0..<2))
        #expect(resumes.map(\.0) == [2])
        #expect(numbers(resumes.first?.1?.events ?? []) == [0, 1])
    }

    @Test func aStalledConsumerHoldsOneSnapshotAndEveryEvent() throws {
        var machine = Machine()
        let id = try subscribe(&machine)
        var noted = 0
        for number in 1...5_000 {
            // Mostly progress (no event); a state change every tenth delivery.
            let events = number % 10 == 0 ? noted..<(noted + 1) : noted..<noted
            noted = events.upperBound
            _ = machine.deliver(delivery(UInt64(number), events: events))
        }
        guard case .deliver(let snapshot) = machine.next(id, 1) else { Issue.record("no snapshot"); return }
        guard case .deliver(let merged) = machine.next(id, 2) else { Issue.record("no update"); return }
        #expect(snapshot.totals.expected == 0 && snapshot.events.isEmpty, "the first snapshot is unchanged")
        #expect(merged.totals.expected == 5_000, "the newest snapshot")
        #expect(numbers(merged.events) == Array(0..<500), "every event, in order")
    }

    @Test func tenThousandStateChangesReachThreeConsumersWithNoneLost() {
        var machine = Machine()
        let start = DownloadManager.Update(events: [], items: [], totals: .init())
        let ids = (0..<3).compactMap { _ in
            machine.subscribe(initial: start, after: .init(deliveriesBefore: 0, eventsBefore: 0))
        }
        var received: [[Int]] = [[], [], []]
        var waiting: [Int: Int] = [:]  // waiter → consumer index
        var nextWaiter = 0
        func take(_ index: Int) {
            nextWaiter += 1
            switch machine.next(ids[index], nextWaiter) {
            case .deliver(let update): received[index] += numbers(update.events)
            case .wait: waiting[nextWaiter] = index
            case .end: break
            }
        }
        var first = 0
        var number: UInt64 = 0
        while first < 10_000 {
            // Deliveries of 1 to 7 events; consumer 0 takes after each, 1 every third, 2 only at the end.
            let count = min(Int(number % 7) + 1, 10_000 - first)
            number += 1
            for (waiter, update) in machine.deliver(delivery(number, events: first..<(first + count))) {
                if let index = waiting.removeValue(forKey: waiter) { received[index] += numbers(update?.events ?? []) }
            }
            first += count
            if waiting.values.contains(0) == false { take(0) }
            if number % 3 == 0, waiting.values.contains(1) == false { take(1) }
        }
        for (waiter, update) in machine.deliver(delivery(number + 1, events: 10_000..<10_000, final: true)) {
            if let index = waiting.removeValue(forKey: waiter) { received[index] += numbers(update?.events ?? []) }
        }
        for index in 0..<3 {
            while true {
                nextWaiter += 1
                guard case .deliver(let update) = machine.next(ids[index], nextWaiter) else { break }
                received[index] += numbers(update.events)
            }
        }
        for index in 0..<3 { #expect(received[index] == Array(0..<10_000), "consumer \(index)") }
        #expect(machine.consumerCount == 0, "ended consumers are removed")
    }

    @Test func theFinalDeliveryEndsEveryConsumerAfterWhatItHolds() throws {
        var machine = Machine()
        let waiting = try subscribe(&machine)
        let idle = try subscribe(&machine)
        _ = machine.next(waiting, 1)
        guard case .wait = machine.next(waiting, 2) else { Issue.record("must wait"); return }
        let resumes = machine.deliver(delivery(1, events: 0..<1, final: true))
        #expect(resumes.count == 1 && resumes.first?.0 == 2 && resumes.first?.1?.events.count == 1)
        guard case .end = machine.next(waiting, 3) else { Issue.record("must end"); return }
        guard case .deliver(let snapshot) = machine.next(idle, 4), case .deliver(let last) = machine.next(idle, 5)
        else { Issue.record("the idle consumer keeps what it holds"); return }
        #expect(snapshot.events.isEmpty && numbers(last.events) == [0])
        guard case .end = machine.next(idle, 6) else { Issue.record("then it ends"); return }
        #expect(machine.consumerCount == 0)
        #expect(machine.deliver(delivery(2, events: 1..<2)).isEmpty, "a delivery after the end feeds nobody")
    }

    @Test func aConsumerStartedAfterTheEndEndsAtOnce() {
        var machine = Machine()
        #expect(machine.finish().isEmpty)
        #expect(
            machine.subscribe(initial: update([], snapshot: 0), after: .init(deliveriesBefore: 0, eventsBefore: 0))
                == nil)
        #expect(machine.consumerCount == 0)
    }

    @Test func finishingResumesTheWaitingConsumersWithTheEnd() throws {
        var machine = Machine()
        let id = try subscribe(&machine)
        _ = machine.next(id, 1)
        _ = machine.next(id, 2)
        #expect(machine.finish() == [2])
        #expect(machine.consumerCount == 0)
    }

    @Test func cancellingRemovesTheConsumerWithWhatItHeld() throws {
        var machine = Machine()
        let idle = try subscribe(&machine)
        let waiting = try subscribe(&machine)
        _ = machine.next(waiting, 1)
        _ = machine.next(waiting, 2)
        #expect(machine.cancel(idle) == nil, "an idle consumer has no waiter")
        #expect(machine.cancel(waiting) == 2)
        #expect(machine.cancel(waiting) == nil, "twice does nothing")
        #expect(machine.consumerCount == 0)
        guard case .end = machine.next(idle, 3) else { Issue.record("a cancelled consumer ends"); return }
    }

    @Test func aSecondWaiterOfOneConsumerGetsTheEnd() throws {
        var machine = Machine()
        let id = try subscribe(&machine)
        _ = machine.next(id, 1)
        guard case .wait = machine.next(id, 2), case .end = machine.next(id, 3) else {
            Issue.record("one waiter at a time")
            return
        }
        #expect(machine.deliver(delivery(1, events: 0..<1)).map(\.0) == [2], "the first waiter still gets it")
    }

    @Test func aThousandConsumersEachGetEveryEvent() {
        var machine = Machine()
        let start = DownloadManager.Update(events: [], items: [], totals: .init())
        let ids = (0..<1_000).compactMap { _ in
            machine.subscribe(initial: start, after: .init(deliveriesBefore: 0, eventsBefore: 0))
        }
        for id in ids { _ = machine.next(id, Int(id)) }
        for id in ids { _ = machine.next(id, Int(id)) }
        let resumes = machine.deliver(delivery(1, events: 0..<3, final: true))
        #expect(ids.count == 1_000 && resumes.count == 1_000)
        #expect(resumes.allSatisfy { numbers($0.1?.events ?? []) == [0, 1, 2] })
        #expect(machine.consumerCount == 1_000, "each ends at its next call")
        for id in ids { _ = machine.next(id, 0) }
        #expect(machine.consumerCount == 0)
    }
}
