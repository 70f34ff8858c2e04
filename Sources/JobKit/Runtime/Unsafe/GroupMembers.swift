/// The registered members of a group that have not completed, by index (`JobGroupStateMachine`).
///
/// Each run's storage is retained by hand, so that the table is plain pointers, made and dropped with
/// no work per slot: an array of optional runs is destroyed slot by slot through the runtime's generic
/// value witnesses (BENCHMARKS.md, "Unsafe code and what it saves"). A slot is set when its member
/// registers and cleared when the member completes or is taken to be cancelled; a registered member's
/// completion holds the group, and with it this table, until then: no slot is still set when the table
/// is dropped. On the safe path (`JOBKIT_SAFE_RUNTIME`) the slots are optional storages.
struct GroupMembers {
    #if JOBKIT_SAFE_RUNTIME
        private var slots: [RunStorage?]
    #else
        private var slots: [Unmanaged<RunStorage>?]
    #endif

    init(count: Int) {
        slots = Array(repeating: nil, count: count)
    }

    /// Keeps a registered member's storage (retained until `remove(at:)` or `takeAll()`).
    @inline(__always)
    mutating func keep(_ storage: RunStorage, at index: Int) {
        #if JOBKIT_SAFE_RUNTIME
            slots[index] = storage
        #else
            slots[index] = Unmanaged.passRetained(storage)
        #endif
    }

    /// Forgets the member at `index` (it completed), releasing its storage.
    @inline(__always)
    mutating func remove(at index: Int) {
        #if !JOBKIT_SAFE_RUNTIME
            slots[index]?.release()
        #endif
        slots[index] = nil
    }

    /// The storage of the registered member at `index`, if it has not completed (nil past the end,
    /// once `takeAll()` emptied the table).
    func storage(at index: Int) -> RunStorage? {
        guard slots.indices.contains(index) else { return nil }
        #if JOBKIT_SAFE_RUNTIME
            return slots[index]
        #else
            return slots[index]?.takeUnretainedValue()
        #endif
    }

    /// Hands over every member still registered (with the table's references) and empties the table.
    mutating func takeAll() -> [RunStorage] {
        #if JOBKIT_SAFE_RUNTIME
            let storages = slots.compactMap { $0 }
        #else
            let storages = slots.compactMap { $0?.takeRetainedValue() }
        #endif
        slots = []
        return storages
    }
}
