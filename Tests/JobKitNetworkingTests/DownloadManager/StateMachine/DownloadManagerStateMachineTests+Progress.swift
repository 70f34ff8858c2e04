import Foundation
import JobKitTestSupport
import Testing

@testable import JobKitNetworking

/// Bytes counted by runs without the lock (`RunProgress`), and what the state makes of them.
extension DownloadManagerStateMachineTests {
    @Test func whatARunCountsIsShownAtOnceAndKeptWhenItStops() throws {
        var machine = machine(limit: 1)
        let (ids, actions) = try add([request("a")], to: &machine)
        let start = actions.starts[0]
        _ = machine.began(ids[0], generation: start.generation, offset: 0, total: 1_000, now: 1)
        // As the download counts: no call into the machine while a delivery waits.
        for _ in 0..<3 { #expect(!start.progress.add(100)) }

        #expect(machine.item(ids[0], now: 2).progress.received == 300)
        #expect(machine.summary(now: 2).totals.received == 300)
        _ = try machine.suspend(ids[0], now: 3)
        #expect(machine.item(ids[0], now: 3).progress.received == 300, "the suspended item keeps its bytes")
        // A chunk of the stopped run, late: it changes nothing.
        _ = start.progress.add(50)
        #expect(machine.item(ids[0], now: 4).progress.received == 300)
        #expect(machine.snapshot(now: 4).items[0].progress.received == 300)
    }

    @Test func aCancelledItemShowsNoBytesEvenWithLateChunks() throws {
        var machine = machine(limit: 1)
        let (ids, actions) = try add([request("a")], to: &machine)
        let start = actions.starts[0]
        _ = machine.began(ids[0], generation: start.generation, offset: 0, total: 1_000, now: 1)
        _ = start.progress.add(400)
        _ = try machine.cancel(ids[0], now: 2)
        _ = start.progress.add(400)
        #expect(machine.item(ids[0], now: 3).progress.received == 0)
        #expect(machine.item(ids[0], now: 3).progress.expected == nil)
    }

    @Test func aNewAttemptCountsFromItsOffsetAndTheSpeedKeepsWhatWasMoved() throws {
        var machine = machine(limit: 1)
        let (ids, actions) = try add([request("a")], to: &machine)
        let start = actions.starts[0]
        let second: UInt64 = 1_000_000_000
        _ = machine.began(ids[0], generation: start.generation, offset: 0, total: 4_000_000, now: 0)
        _ = machine.snapshot(now: 0)
        _ = start.progress.add(1_000_000)
        // The attempt failed and is retried from where the `.part` was cut to.
        _ = machine.began(ids[0], generation: start.generation, offset: 500_000, total: 4_000_000, now: second)
        _ = start.progress.add(1_000_000)
        let (items, totals) = machine.snapshot(now: 2 * second)

        #expect(items[0].progress.received == 1_500_000)
        #expect(abs(items[0].progress.bytesPerSecond - 1_000_000) < 1, "2 MB moved in 2 s")
        #expect(abs(totals.bytesPerSecond - 1_000_000) < 1)
    }

    @Test func aCompletedOrClosedRunKeepsItsCountedBytes() throws {
        var machine = machine(limit: 2)
        let (ids, actions) = try add([request("a"), request("b")], to: &machine)
        for start in actions.starts {
            _ = machine.began(start.id, generation: start.generation, offset: 0, total: 1_000, now: 1)
            _ = start.progress.add(600)
        }
        _ = actions.starts[0].progress.add(400)
        let finishes = machine.finishing(ids[0], generation: actions.starts[0].generation, size: 1_000)
        #expect(finishes)
        _ = machine.runEnded(ids[0], generation: actions.starts[0].generation, .completed, now: 2)
        _ = machine.close(now: 3)

        #expect(machine.item(ids[0], now: 4).progress.received == 1_000)
        #expect(machine.item(ids[1], now: 4).state == .pending)
        #expect(machine.item(ids[1], now: 4).progress.received == 600)
        #expect(machine.summary(now: 4).totals.received == 1_600)
        #expect(machine.progress.unfoldedBytes == 0, "every run's count was taken")
    }

    @Test func aStoppedRunsLateChunksCountNowhereAndAskForNoDelivery() throws {
        var machine = machine(limit: 2)
        let (ids, actions) = try add([request("a"), request("b")], to: &machine)
        let second: UInt64 = 1_000_000_000
        for start in actions.starts {
            _ = machine.began(start.id, generation: start.generation, offset: 0, total: 100_000_000, now: 0)
        }
        _ = machine.snapshot(now: 0)
        _ = actions.starts[0].progress.add(100)
        _ = try machine.suspend(ids[0], now: second)
        _ = machine.beginNumberedDelivery(.now, now: second)
        _ = machine.endDelivery(now: second)

        #expect(!actions.starts[0].progress.add(10_000_000), "no delivery for a stopped run's bytes")
        #expect(machine.progress.unfoldedBytes == 0)
        let (items, totals) = machine.snapshot(now: 2 * second)
        #expect(items[0].progress.received == 100)
        #expect(totals.bytesPerSecond < 100, "the total speed counts no byte of the stopped run's")
        // Closed: the final delivery was the last, whatever a run still counts.
        _ = actions.starts[1].progress.add(10)
        _ = machine.close(now: 3 * second)
        #expect(!actions.starts[1].progress.add(10))
        #expect(machine.progressCounted(now: 3 * second) == nil)
    }

    @Test func countsPastInt64MaxSaturateTheTotalsAndNeverWrap() throws {
        var machine = machine(limit: 2)
        let (ids, actions) = try add([request("a"), request("b")], to: &machine)
        for start in actions.starts {
            _ = machine.began(start.id, generation: start.generation, offset: 0, total: nil, now: 0)
            _ = start.progress.add(.max)
        }
        #expect(machine.totalTransferredNow >= 0)
        for id in ids { _ = try machine.suspend(id, now: 1) }
        #expect(machine.totalTransferred == .max)
        #expect(machine.totalTransferredNow == .max)
        #expect(machine.progress.unfoldedBytes == 0)
        #expect(machine.summary(now: 2).totals.receivedOfUnknownLength == .max)
    }
}
