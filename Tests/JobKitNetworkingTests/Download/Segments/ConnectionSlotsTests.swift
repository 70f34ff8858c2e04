import Dispatch
import JobKit
import Testing

@testable import JobKitNetworking

/// `ConnectionSlots`: the connections a run may open, kept by the run.
@Suite struct ConnectionSlotsTests {
    @Test func slotsOnlyGoDownAndOneIsAlwaysKept() {
        let slots = ConnectionSlots(4)
        #expect(slots.count == 4)
        #expect(!slots.lower(to: 4), "the same count tells nobody")
        #expect(!slots.lower(to: 9), "nor a higher one")
        #expect(slots.lower(to: 3))
        #expect(slots.count == 3)
        #expect(slots.lower(to: 0), "zero counts as one")
        #expect(slots.count == 1)
        #expect(!slots.lower(to: -5))
        #expect(!slots.lower(to: .min))
        #expect(ConnectionSlots(0).count == 1)
        #expect(ConnectionSlots(.min).count == 1)
    }

    @Test func theOwnerIsToldOncePerLowering() {
        let told = LockedBox<[Int]>.make([])
        var hooks = DownloadHooks(began: { _, _ in }, received: { _ in }, beforeFinalize: { _, _ in })
        hooks.connectionsUsed = { count in told.withLock { $0.append(count) } }
        hooks.slots = ConnectionSlots(8)
        for count in [8, 5, 5, 6, 2, 2, 1, 1, 0] { hooks.useConnections(count) }
        #expect(told.withLock { $0 } == [5, 2, 1])
    }

    @Test func concurrentLoweringsEndAtTheLowestAndEachValueIsToldAtMostOnce() {
        let slots = ConnectionSlots(1_000)
        let told = LockedBox<[Int]>.make([])
        DispatchQueue.concurrentPerform(iterations: 4) { worker in
            for count in stride(from: 999 - worker, through: 1, by: -4) where slots.lower(to: count) {
                told.withLock { $0.append(count) }
            }
        }
        #expect(slots.count == 1)
        let values = told.withLock { $0 }
        #expect(Set(values).count == values.count)
        #expect(values.contains(1))
    }
}
