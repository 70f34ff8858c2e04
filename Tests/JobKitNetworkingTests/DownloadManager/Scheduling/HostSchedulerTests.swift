import JobKitTestSupport
import Testing

@testable import JobKitNetworking

/// The download manager's host scheduler alone: its queues, its limits and its counts.
@Suite struct HostSchedulerTests {
    typealias ItemID = DownloadManager.ItemID

    func id(_ raw: UInt64) -> ItemID { ItemID(rawValue: raw) }

    /// Claims until nothing more can start, nothing blocked.
    func claimAll(_ scheduler: inout HostScheduler, blocked: Set<ItemID> = []) -> [ItemID] {
        var claimed: [ItemID] = []
        while let next = scheduler.claimNext(isBlocked: { blocked.contains($0) }) { claimed.append(next.id) }
        return claimed
    }

    @Test func anEmptySchedulerStartsNothing() {
        var scheduler = HostScheduler(limit: 4, perHost: nil)
        #expect(scheduler.claimNext { _ in false } == nil)
        #expect(scheduler.activeCount == 0 && scheduler.queueCount == 0 && scheduler.queuedSlots == 0)
    }

    @Test func limitsBelowOneCountAsOne() {
        let scheduler = HostScheduler(limit: 0, perHost: -3)
        #expect(scheduler.limit == 1 && scheduler.perHost == 1)
    }

    @Test func oneItemIsPendingThenRunningThenGone() {
        var scheduler = HostScheduler(limit: 1, perHost: nil)
        scheduler.enqueue(id(1), host: "a")
        #expect(scheduler.pendingCount == 1 && scheduler.queued(for: "a") == [id(1)])
        let claimed = scheduler.claimNext { _ in false }
        #expect(claimed?.id == id(1) && claimed?.host == "a")
        #expect(scheduler.pendingCount == 0 && scheduler.runningCount == 1 && scheduler.running(on: "a") == 1)
        #expect(scheduler.queueCount == 0, "a host with nothing queued holds no queue")
        scheduler.runEnded(host: "a")
        #expect(scheduler.activeCount == 0 && scheduler.running(on: "a") == 0)
    }

    @Test func aRunThatGivesBackSlotsMakesRoomAndItsEndFreesTheRest() {
        var scheduler = HostScheduler(limit: 4, perHost: 3)
        for raw: UInt64 in 1...3 { scheduler.enqueue(id(raw), host: raw == 3 ? "b" : "a") }
        let first = scheduler.claimNext(isBlocked: { _ in false }, connections: { _ in 4 })
        #expect(first?.slots == 3, "its host's limit")
        let second = scheduler.claimNext(isBlocked: { _ in false }, connections: { _ in 4 })
        #expect(second?.id == id(3) && second?.slots == 1, "the total's last slot")
        #expect(scheduler.claimNext(isBlocked: { _ in false }, connections: { _ in 4 }) == nil)

        scheduler.runGaveBack(host: "a", slots: 2)
        #expect(scheduler.runningCount == 2 && scheduler.running(on: "a") == 1)
        let third = scheduler.claimNext(isBlocked: { _ in false }, connections: { _ in 4 })
        #expect(third?.id == id(2) && third?.slots == 2)
        #expect(scheduler.runningCount == 4 && scheduler.running(on: "a") == 3)

        scheduler.runEnded(host: "a", slots: 1)
        scheduler.runEnded(host: "b", slots: 1)
        scheduler.runEnded(host: "a", slots: 2)
        #expect(scheduler.activeCount == 0 && scheduler.running(on: "a") == 0 && scheduler.running(on: "b") == 0)
    }

    @Test func manyItemsStartInTicketOrderAcrossHosts() {
        var scheduler = HostScheduler(limit: .max, perHost: nil)
        let count: UInt64 = 200_000
        for raw in 1...count { scheduler.enqueue(id(raw), host: "h\(raw % 8)") }
        #expect(scheduler.pendingCount == Int(count))
        var expected: UInt64 = 1
        var inOrder = true
        while let next = scheduler.claimNext(isBlocked: { _ in false }) {
            inOrder = inOrder && next.id == id(expected)
            expected += 1
        }
        #expect(inOrder && expected == count + 1)
        #expect(scheduler.runningCount == Int(count) && scheduler.queueCount == 0)
    }

    @Test func theTotalLimitCapsRunsAndARaiseMakesRoom() {
        var scheduler = HostScheduler(limit: 2, perHost: nil)
        for raw in 1...5 { scheduler.enqueue(id(UInt64(raw)), host: "h\(raw)") }
        #expect(claimAll(&scheduler) == [id(1), id(2)])
        scheduler.setLimit(4)
        #expect(claimAll(&scheduler) == [id(3), id(4)])
        scheduler.runEnded(host: "h1")
        #expect(claimAll(&scheduler) == [id(5)])
        #expect(scheduler.runningCount == 4 && scheduler.pendingCount == 0)
    }

    @Test func thePerHostLimitSkipsAFullHostAndKeepsItsOrder() {
        var scheduler = HostScheduler(limit: 10, perHost: 1)
        scheduler.enqueue(id(1), host: "a")
        scheduler.enqueue(id(2), host: "a")
        scheduler.enqueue(id(3), host: "b")
        scheduler.enqueue(id(4), host: "a")
        #expect(claimAll(&scheduler) == [id(1), id(3)])
        scheduler.runEnded(host: "a")
        #expect(claimAll(&scheduler) == [id(2)], "the oldest of host a, not a later one")
        #expect(scheduler.queued(for: "a") == [id(4)])
    }

    @Test func aBlockedHeadHoldsItsHostButNotTheOthers() {
        var scheduler = HostScheduler(limit: 10, perHost: nil)
        scheduler.enqueue(id(1), host: "a")
        scheduler.enqueue(id(2), host: "a")
        scheduler.enqueue(id(3), host: "b")
        #expect(claimAll(&scheduler, blocked: [id(1)]) == [id(3)], "nothing of host a overtakes its head")
        #expect(claimAll(&scheduler) == [id(1), id(2)])
    }

    @Test func aWithdrawnItemNeverStarts() {
        var scheduler = HostScheduler(limit: 10, perHost: nil)
        scheduler.enqueue(id(1), host: "a")
        scheduler.enqueue(id(2), host: "a")
        scheduler.withdraw(id(1), host: "a")
        #expect(scheduler.pendingCount == 1)
        #expect(claimAll(&scheduler) == [id(2)])
        scheduler.enqueue(id(3), host: "b")
        scheduler.withdraw(id(3), host: "b")
        #expect(scheduler.queueCount == 0, "an emptied queue is dropped")
    }

    @Test func churnBehindABlockedHeadKeepsTheQueuesBounded() {
        var scheduler = HostScheduler(limit: 10, perHost: nil)
        scheduler.enqueue(id(1), host: "a")
        scheduler.enqueue(id(2), host: "a")
        for _ in 0..<scaledForTheRun(100_000) {
            scheduler.withdraw(id(2), host: "a")
            scheduler.enqueue(id(2), host: "a")
            _ = scheduler.claimNext { $0 == id(1) }
        }
        #expect(scheduler.pendingCount == 2 && scheduler.runningCount == 0)
        #expect(scheduler.queuedSlots <= 2 * scheduler.pendingCount + 65)
        #expect(claimAll(&scheduler) == [id(1), id(2)])
        #expect(scheduler.queuedSlots == 0 && scheduler.queueCount == 0)
    }

    @Test func aRunStoppedByClosingCountsAsPendingAndIsNotQueued() {
        var scheduler = HostScheduler(limit: 10, perHost: nil)
        scheduler.enqueue(id(1), host: "a")
        _ = claimAll(&scheduler)
        scheduler.runStoppedByClose(host: "a")
        #expect(scheduler.pendingCount == 1 && scheduler.runningCount == 0)
        #expect(scheduler.claimNext { _ in false } == nil && scheduler.queueCount == 0)
    }
}
