import JobKit

/// The download manager's items: each entry by id, the order they were added in, the id that holds
/// each name, and the next id to hand out.
///
/// It keeps one rule: an id is in the order, and its name maps to it, exactly while its entry is in
/// the table — so a name is held by at most one item, and an item leaves no trace once removed. An
/// entry's id and name never change (`update` cannot change them); ids only grow. Adding and
/// removing an item cost amortized O(1), wherever it is in the order (the order is a `SlotQueue`, so
/// removing every item one by one is linear, and its stale slots stay within twice the items plus 64).
///
/// A value behind the manager's lock, like the state machine that owns it.
struct ItemTable<Handle> {
    typealias ItemID = DownloadManager.ItemID
    typealias Entry = DownloadManagerStateMachine<Handle>.Entry

    /// The entries, densely, in no particular order (a removal moves the last one into its place), and
    /// where each id's is. Not a dictionary of entries: its buckets are powers of two at most three
    /// quarters full, and an entry is over 200 bytes, so 100,000 items took 262,144 buckets of one
    /// (59 MB); this way they take the entries and a small index (26 MB).
    private var entries: [Entry] = []
    private var slots: [ItemID: Int] = [:]
    private var order = SlotQueue<ItemID>()
    /// Orders the slots of `order` (its tickets).
    private var lastTicket: UInt64 = 0
    private var names: [String: ItemID] = [:]
    /// The smallest id no item has used: ids count up from 1.
    private(set) var nextID: UInt64 = 1

    /// No item.
    init() {}

    /// How many items there are.
    var count: Int { entries.count }

    /// Whether there is no item.
    var isEmpty: Bool { entries.isEmpty }

    /// Every item's id, in the order added: O(items).
    var ids: [ItemID] { order.keys }

    /// Slots the order holds, stale ones included (for tests of its bound).
    var orderSlotCount: Int { order.slotCount }

    /// The item `id`, if there is one.
    subscript(id: ItemID) -> Entry? { slots[id].map { entries[$0] } }

    /// The id of the item named `name`, if there is one.
    func id(named name: String) -> ItemID? { names[name] }

    /// The item named `name`, if there is one.
    func entry(named name: String) -> Entry? { names[name].flatMap { self[$0] } }

    /// Whether an item named `name` keeps its `.part` to resume from: there is one, and it is not
    /// cancelled (running, pending, suspended, held, failed — or completed, its `.part` renamed).
    func holdsPart(_ name: String) -> Bool {
        guard let entry = entry(named: name) else { return false }
        return !entry.phase.isCancelled
    }

    /// Makes room for `additional` more items at once, when that is more than the table holds (a batch
    /// of adds into a small table): its storage then grows once, to the size asked, where doubling would
    /// have copied it along the way and left up to twice the room. A smaller batch grows as usual.
    mutating func reserve(_ additional: Int) {
        let wanted = entries.count + additional
        guard additional > entries.count, wanted > entries.capacity else { return }
        entries.reserveCapacity(wanted)
        slots.reserveCapacity(wanted)
        names.reserveCapacity(wanted)
    }

    /// Adds `entry` at the end of the order; its id is used from then on. An id or a name already
    /// held is a programmer error (the state machine checks both first).
    mutating func insert(_ entry: Entry) {
        precondition(slots[entry.id] == nil, "item \(entry.id.rawValue) is in the table already")
        precondition(names[entry.name] == nil, "the name '\(entry.name)' is held by another item")
        slots[entry.id] = entries.count
        entries.append(entry)
        lastTicket += 1
        order.append(entry.id, ticket: lastTicket)
        names[entry.name] = entry.id
        reserveIDs(below: entry.id.rawValue + 1)
    }

    /// Changes the item `id` (not its id or name); returns what `change` returns, or nil when there is
    /// no such item.
    @discardableResult
    mutating func update<Result>(_ id: ItemID, _ change: (inout Entry) -> Result) -> Result? {
        guard let slot = slots[id] else { return nil }
        let name = entries[slot].name
        let result = change(&entries[slot])
        precondition(entries[slot].id == id && entries[slot].name == name, "an item's id and name never change")
        return result
    }

    /// Removes the item `id` and frees its name; returns it.
    @discardableResult
    mutating func remove(_ id: ItemID) -> Entry? {
        guard let slot = slots.removeValue(forKey: id) else { return nil }
        let entry = entries[slot]
        let last = entries.removeLast()
        if slot < entries.count {
            entries[slot] = last
            slots[last.id] = slot
        }
        names[entry.name] = nil
        order.remove(id)
        return entry
    }

    /// Marks the ids below `bound` used (the journal's next id, on restore): none is handed out again.
    mutating func reserveIDs(below bound: UInt64) {
        nextID = max(nextID, bound)
    }
}

extension ItemTable: Sendable where Handle: Sendable {}
