import Foundation
import JobKitTestSupport
import Testing

@testable import JobKitNetworking

/// The state machine's updates: deliveries, speeds and totals.
extension DownloadManagerStateMachineTests {
    @Test func progressIsCoalescedAndStateChangesAreNeverDropped() throws {
        var machine = machine(limit: 1)
        let (ids, actions) = try add([request("a"), request("b")], to: &machine)
        let generation = actions.starts[0].generation
        #expect(actions.wake == .now)

        // While the wake is pending, progress asks for nothing more.
        let beganWake = machine.began(ids[0], generation: generation, offset: 0, total: 1000, now: 1)
        #expect(beganWake == nil)
        let progressWake = machine.received(ids[0], generation: generation, count: 100, now: 2)
        #expect(progressWake == nil)
        let delivery = machine.beginDelivery(.now, now: 3)
        let first = try #require(delivery)
        #expect(first.events.count == 3)
        #expect(first.items[0].progress.received == 100)
        // Progress during the delivery waits for its end, then for the interval.
        let duringDelivery = machine.received(ids[0], generation: generation, count: 100, now: 4)
        #expect(duringDelivery == nil)
        let afterDelivery = machine.endDelivery(now: 5)
        let wake = try #require(afterDelivery)
        #expect(wake == .later(generation: 1, afterNanoseconds: 100_000_000 - 2))
        // More progress: still one wake.
        for step in 0..<1000 {
            let wake = machine.received(ids[0], generation: generation, count: 1, now: 6 + UInt64(step))
            #expect(wake == nil)
        }
        // A state change wakes at once; the later wake is then stale.
        _ = machine.runEnded(ids[0], generation: generation, .completed, now: 2_000)
        let staleDelivery = machine.beginDelivery(wake, now: 2_001)
        #expect(staleDelivery == nil)
        let delivery2 = machine.beginDelivery(.now, now: 2_002)
        let second = try #require(delivery2)
        let changes = second.events.compactMap { event -> DownloadManager.State? in
            if case .changed(let item) = event { return item.state }
            return nil
        }
        #expect(changes == [.completed, .running])
        #expect(second.items[0].progress.received == 1200)
    }

    @Test func aBusyResultQueueGetsOneWakeAndEveryEvent() throws {
        var machine = machine(limit: 100)
        let (_, actions) = try add((0..<50).map { request("f\($0)") }, to: &machine)
        var wakes = actions.wake == nil ? 0 : 1
        for start in actions.starts {
            if machine.runEnded(start.id, generation: start.generation, .completed, now: 1).wake != nil { wakes += 1 }
        }
        #expect(wakes == 1, "one block waits on the result queue, however many changes")
        let delivery = machine.beginDelivery(.now, now: 2)
        let update = try #require(delivery)
        #expect(update.events.count == 50 * 3 + 1)
    }

    @Test func speedIsAMovingAverageAndTimeRemainingFollowsIt() throws {
        var machine = machine()
        let (ids, actions) = try add([request("a")], to: &machine)
        let generation = actions.starts[0].generation
        let second: UInt64 = 1_000_000_000
        _ = machine.began(ids[0], generation: generation, offset: 0, total: 10_000_000, now: 0)
        for tick in 1...4 {
            _ = machine.received(ids[0], generation: generation, count: 1_000_000, now: UInt64(tick) * second)
            _ = machine.snapshot(now: UInt64(tick) * second)
        }
        let (items, totals) = machine.snapshot(now: 4 * second)
        #expect(abs(items[0].progress.bytesPerSecond - 1_000_000) < 1)
        #expect(abs((items[0].progress.secondsRemaining ?? 0) - 6) < 0.01)
        #expect(abs(totals.bytesPerSecond - 1_000_000) < 1)
        #expect(totals.secondsRemaining.map { abs($0 - 6) < 0.01 } == true)
        // A stall brings the speed to 0 once the window has passed; the time left is unknown.
        let (stalled, _) = machine.snapshot(now: 10 * second)
        #expect(stalled[0].progress.bytesPerSecond == 0)
        #expect(stalled[0].progress.secondsRemaining == nil)
    }

    @Test func totalsCountEveryStateAndKnownLengths() throws {
        var machine = machine(limit: 1)
        let (ids, actions) = try add([request("a"), request("b"), request("c")], to: &machine)
        _ = machine.began(ids[0], generation: actions.starts[0].generation, offset: 50, total: 200, now: 1)
        _ = try machine.suspend(ids[2], now: 1)
        let totals = machine.summary(now: 2).totals
        #expect(totals.running == 1)
        #expect(totals.pending == 1)
        #expect(totals.suspended == 1)
        #expect(totals.received == 50)
        #expect(totals.expected == 200)
        #expect(totals.itemsOfUnknownLength == 1, "the pending one; a suspended one waits")
        #expect(totals.secondsRemaining == nil)
        #expect(totals.count == 3)
        // Once every active item's length is known, the time left is known too.
        _ = try machine.suspend(ids[1], now: 3)
        _ = machine.received(ids[0], generation: actions.starts[0].generation, count: 50, now: 1_000_000_000)
        let known = machine.summary(now: 1_000_000_000).totals
        #expect(known.itemsOfUnknownLength == 0)
        #expect(known.received == 100)
        #expect(known.bytesPerSecond > 0)
        #expect(known.secondsRemaining.map { abs($0 - 100 / known.bytesPerSecond) < 0.001 } == true)
    }

    @Test func bytesOfUnknownLengthNeverMakeTheTotalPassItsLength() throws {
        var machine = machine(limit: 2)
        let (ids, actions) = try add([request("known"), request("unknown")], to: &machine)
        _ = machine.began(ids[0], generation: actions.starts[0].generation, offset: 0, total: 100, now: 1)
        _ = machine.received(ids[0], generation: actions.starts[0].generation, count: 40, now: 1)
        // A server that sends no length: its bytes are counted apart.
        _ = machine.began(ids[1], generation: actions.starts[1].generation, offset: 0, total: nil, now: 1)
        _ = machine.received(ids[1], generation: actions.starts[1].generation, count: 5_000, now: 1)

        let totals = machine.summary(now: 2).totals

        #expect(totals.received == 40)
        #expect(totals.expected == 100)
        #expect(totals.fraction == 0.4)
        #expect(totals.receivedOfUnknownLength == 5_000)
        #expect(totals.itemsOfUnknownLength == 1)
        #expect(totals.secondsRemaining == nil)
    }
}
