/// A first-in, first-out queue of keys from which any key can be withdrawn in O(1).
///
/// A withdrawn key leaves a stale slot, dropped when it reaches the front; a key queued again goes to
/// the back, its earlier slot going stale. Once stale slots outnumber the live ones (plus 64) the
/// queue is swept, so it never holds more than twice its live keys plus 64 slots whatever the churn: a
/// job cancelled while pending, or an item suspended and resumed a million times behind a blocked
/// head, costs amortized O(1) and no memory that stays.
///
/// The one slot queue of the package: `JobQueue`'s pending jobs and the download manager's per-host
/// queues. Each slot carries the ticket its key was queued with, so that queues sharing one ticket
/// counter can be merged in order.
package struct SlotQueue<Key: Hashable> {
    private var slots = Deque<(key: Key, ticket: UInt64)>()
    /// The live keys and the ticket of their current slot.
    private var tickets: [Key: UInt64] = [:]

    /// An empty queue.
    package init() {}

    /// The live keys.
    package var count: Int { tickets.count }

    /// Whether no key is queued.
    package var isEmpty: Bool { tickets.isEmpty }

    /// Slots held, stale ones included (for tests of the bound).
    package var slotCount: Int { slots.count }

    /// The live keys, first to last.
    package var keys: [Key] {
        // With no stale slot (no key withdrawn or queued again since the last sweep), every one is live.
        if slots.count == tickets.count { return slots.elements.map { $0.key } }
        return slots.elements.compactMap { isLive($0) ? $0.key : nil }
    }

    /// Whether `key` is queued.
    package func contains(_ key: Key) -> Bool { tickets[key] != nil }

    /// Queues `key` at the back under `ticket` (a key already queued moves to the back).
    package mutating func append(_ key: Key, ticket: UInt64) {
        tickets[key] = ticket
        slots.append((key, ticket))
        if slots.count > 2 * tickets.count + 64 { sweep() }
    }

    /// Withdraws `key`; returns whether it was queued.
    @discardableResult
    package mutating func remove(_ key: Key) -> Bool {
        guard tickets.removeValue(forKey: key) != nil else { return false }
        if tickets.isEmpty {
            slots = Deque()
        } else if slots.count > 2 * tickets.count + 64 {
            sweep()
        }
        return true
    }

    /// The front key and its ticket, if any (stale slots at the front are dropped).
    package mutating func first() -> (key: Key, ticket: UInt64)? {
        while let slot = slots.first {
            if isLive(slot) { return slot }
            _ = slots.popFirst()
        }
        return nil
    }

    /// Removes and returns the front key, if any.
    package mutating func popFirst() -> Key? {
        guard let slot = first() else { return nil }
        _ = slots.popFirst()
        tickets[slot.key] = nil
        return slot.key
    }

    private func isLive(_ slot: (key: Key, ticket: UInt64)) -> Bool {
        tickets[slot.key] == slot.ticket
    }

    /// Drops every stale slot, keeping the order: O(slots), paid once the stale ones outnumber the
    /// live ones by 64, so amortized O(1) per `append` and `remove`.
    private mutating func sweep() {
        var live = Deque<(key: Key, ticket: UInt64)>()
        for slot in slots.elements where isLive(slot) { live.append(slot) }
        slots = live
    }
}

extension SlotQueue: Sendable where Key: Sendable {}
