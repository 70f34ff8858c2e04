import Foundation
import JobKit
import Testing

@testable import JobKitNetworking

/// The download manager's item table alone: its entries, their order, their names and ids.
@Suite struct ItemTableTests {
    typealias Table = ItemTable<Int>
    typealias ItemID = DownloadManager.ItemID

    typealias Phase = DownloadManagerStateMachine<Int>.Phase

    func entry(_ id: UInt64, _ name: String, phase: Phase = .cancelled) -> Table.Entry {
        let url = URL(string: "https://a.example/\(name)")!
        return Table.Entry(
            id: ItemID(rawValue: id), url: url, name: name,
            host: "a.example", checksum: nil, phase: phase, meter: SpeedMeter(window: 1_000_000))
    }

    @Test func anEmptyTableHasNoItemAndHandsOutIDOneFirst() {
        let table = Table()
        #expect(table.isEmpty && table.count == 0 && table.ids.isEmpty)
        #expect(table.nextID == 1)
        #expect(table[ItemID(rawValue: 1)] == nil)
        #expect(table.id(named: "a") == nil && table.entry(named: "a") == nil)
        #expect(!table.holdsPart("a"))
    }

    @Test func oneItemIsFoundByItsIDAndItsName() {
        var table = Table()
        table.insert(entry(1, "a"))
        #expect(table.count == 1 && table.ids == [ItemID(rawValue: 1)])
        #expect(table[ItemID(rawValue: 1)]?.name == "a")
        #expect(table.id(named: "a") == ItemID(rawValue: 1))
        #expect(table.entry(named: "a")?.id == ItemID(rawValue: 1))
        #expect(table.nextID == 2, "an inserted id is used")
    }

    @Test func manyItemsKeepTheOrderTheyWereAddedIn() {
        var table = Table()
        let count: UInt64 = 100_000
        for id in stride(from: count, to: 0, by: -1) { table.insert(entry(id, "f\(id)")) }
        #expect(table.count == Int(count))
        #expect(table.ids.first == ItemID(rawValue: count) && table.ids.last == ItemID(rawValue: 1))
        #expect(table.nextID == count + 1, "the largest id counts, whatever the order")
        #expect(table.id(named: "f777") == ItemID(rawValue: 777))
    }

    @Test func removingAnItemFreesItsNameAndLeavesNoTrace() {
        var table = Table()
        table.insert(entry(1, "a"))
        table.insert(entry(2, "b"))
        let removed = table.remove(ItemID(rawValue: 1))
        #expect(removed?.name == "a")
        #expect(table.ids == [ItemID(rawValue: 2)] && table.count == 1)
        #expect(table.id(named: "a") == nil && table[ItemID(rawValue: 1)] == nil)
        #expect(table.remove(ItemID(rawValue: 1)) == nil, "removing twice does nothing")
        #expect(table.nextID == 3, "a removed item's id is not handed out again")
    }

    @Test func churnOfOneNameKeepsTheTableAtOneItem() {
        // Added and removed a hundred thousand times: the table holds what is there, nothing more.
        var table = Table()
        table.insert(entry(1, "kept"))
        for id in UInt64(2)..<100_002 {
            table.insert(entry(id, "churn"))
            #expect(table.id(named: "churn") == ItemID(rawValue: id))
            table.remove(ItemID(rawValue: id))
        }
        #expect(table.count == 1 && table.ids == [ItemID(rawValue: 1)])
        #expect(table.id(named: "churn") == nil)
        #expect(table.nextID == 100_002)
    }

    @Test func removingEveryItemOneByOneIsLinearAndKeepsTheOrderBounded() {
        // Removed from the middle, the front and the back: each removal is amortized O(1) (an array
        // order made removing a hundred thousand items take minutes), and stale slots are swept.
        var table = Table()
        let count: UInt64 = 100_000
        for id in 1...count { table.insert(entry(id, "f\(id)")) }
        var largest = 0
        for id in stride(from: count / 2, through: 1, by: -1) {
            table.remove(ItemID(rawValue: id))
            table.remove(ItemID(rawValue: count + 1 - id))
            largest = max(largest, table.orderSlotCount - 2 * table.count)
        }
        #expect(table.isEmpty && table.ids.isEmpty)
        #expect(largest <= 64, "stale slots stay within the live ones plus 64")
        #expect(table.orderSlotCount == 0)
    }

    @Test func updateChangesTheEntryInPlace() {
        var table = Table()
        table.insert(entry(1, "a"))
        let result = table.update(ItemID(rawValue: 1)) { entry -> Int64 in
            entry.received = 42
            entry.phase = .suspended
            return entry.received
        }
        #expect(result == 42)
        #expect(table[ItemID(rawValue: 1)]?.received == 42)
        #expect(table.update(ItemID(rawValue: 9)) { $0.received = 1 } == nil, "no such item: nothing runs")
    }

    @Test func reservedIDsAreNeverHandedOutAgain() {
        var table = Table()
        table.reserveIDs(below: 9)
        #expect(table.nextID == 9)
        table.reserveIDs(below: 3)
        #expect(table.nextID == 9, "ids only grow")
        table.insert(entry(4, "a"))
        #expect(table.nextID == 9)
    }

    @Test func aNameHoldsItsPartUnlessItsItemIsCancelled() {
        var table = Table()
        table.insert(entry(1, "cancelled"))
        table.insert(entry(2, "suspended", phase: .suspended))
        table.insert(entry(3, "pending", phase: .pending(ticket: 1)))
        #expect(!table.holdsPart("cancelled"))
        #expect(table.holdsPart("suspended") && table.holdsPart("pending"))
        #expect(!table.holdsPart("nobody"))
    }

    /// The entries are stored densely: a removal moves the last one into its place. Removing in a
    /// random order, updating the moved ones, then adding again must find every item by id and name,
    /// with its own changes, in the order added.
    @Test func removalsInAnyOrderKeepEveryOtherItemFoundWithItsOwnChanges() {
        var table = Table()
        table.reserve(1_000)
        for id in 1...1_000 { table.insert(entry(UInt64(id), "f\(id)")) }
        var generator = SystemRandomNumberGenerator()
        let removed = Set((1...1_000).shuffled(using: &generator).prefix(600))
        for id in removed { #expect(table.remove(ItemID(rawValue: UInt64(id)))?.name == "f\(id)") }
        let kept = (1...1_000).filter { !removed.contains($0) }
        for id in kept { table.update(ItemID(rawValue: UInt64(id))) { $0.received = Int64(id) } }
        for id in 1_001...1_100 { table.insert(entry(UInt64(id), "f\(id)")) }
        #expect(table.count == kept.count + 100)
        #expect(table.ids.map(\.rawValue) == (kept + Array(1_001...1_100)).map(UInt64.init))
        for id in kept {
            #expect(table[ItemID(rawValue: UInt64(id))]?.received == Int64(id))
            #expect(table.entry(named: "f\(id)")?.id.rawValue == UInt64(id))
        }
        for id in removed { #expect(table[ItemID(rawValue: UInt64(id))] == nil && table.id(named: "f\(id)") == nil) }
    }
}
