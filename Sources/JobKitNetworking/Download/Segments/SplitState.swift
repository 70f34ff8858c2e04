import JobKit

/// The state of a `SegmentedDownload` (kept behind its lock): the split's phase, its map, its
/// connections, and the counters that decide when the map is written and the `.part` flushed.
struct SplitState {
    enum Phase {
        case probing, running, stopped
    }

    /// A flush of the `.part` decided by a write: the map as it was just before it.
    struct PendingSync {
        var map: SegmentMap
        var ticket: UInt64
    }

    /// What a write of `count` bytes leads to: the metadata to write beside the `.part` (nil: not
    /// yet), the progress to report (nil: unchanged to the thousandth), a flush to make.
    struct Recorded {
        var persist: PartMetadata?
        var progress: Double?
        var sync: PendingSync?
    }

    var phase = Phase.probing
    var metadata: PartMetadata?
    var handles: [JobHandle] = []
    /// The segments not yet finished, waiting ones included.
    var running = 0
    /// Resumed ranges waiting for a connection to finish (more were missing than slots held).
    var waiting: [(index: Int, range: Range<Int64>)] = []
    private var sincePersist: Int64 = 0
    private var sinceSync: Int64 = 0
    private var lastSyncTicket: UInt64 = 0
    private var recordedSyncTicket: UInt64 = 0
    private var lastTicket: UInt64 = 0
    private var persistedTicket: UInt64 = 0
    private var reportedPermille: Int64 = -1

    /// Records `count` bytes written in segment `index`: the map is due after `persistInterval`
    /// bytes, a flush after `syncInterval` (only when `syncs`).
    mutating func record(
        _ count: Int, in index: Int, syncs: Bool, syncInterval: Int64, persistInterval: Int64
    ) -> Recorded {
        guard phase == .running, var metadata, metadata.segments?.record(Int64(count), in: index) == true else {
            return Recorded()
        }
        self.metadata = metadata
        sincePersist += Int64(count)
        let map = metadata.segments!
        let permille = map.doneBytes * 1000 / map.length
        var recorded = Recorded()
        if permille != reportedPermille { recorded.progress = Double(map.doneBytes) / Double(map.length) }
        reportedPermille = permille
        if syncs {
            sinceSync += Int64(count)
            if sinceSync >= syncInterval {
                // Every byte this map claims was written before it is taken: the flush covers them.
                sinceSync = 0
                lastSyncTicket += 1
                recorded.sync = PendingSync(map: map, ticket: lastSyncTicket)
            }
        }
        if sincePersist >= persistInterval {
            sincePersist = 0
            recorded.persist = metadata
        }
        return recorded
    }

    /// Records the map of a finished flush as the flushed progress, unless a later flush's is
    /// recorded already or the split stopped: the metadata to write, or nil.
    mutating func recordSync(_ sync: PendingSync) -> PartMetadata? {
        guard phase == .running, sync.ticket > recordedSyncTicket, var metadata else { return nil }
        recordedSyncTicket = sync.ticket
        metadata.syncedSegments = sync.map
        self.metadata = metadata
        sincePersist = 0
        return metadata
    }

    /// A ticket for a write of the map, newer than every ticket before.
    mutating func takeTicket() -> UInt64 {
        lastTicket += 1
        return lastTicket
    }

    /// Whether the map of `ticket` may be written now: the split runs and no newer map was written.
    mutating func mayWrite(_ ticket: UInt64) -> Bool {
        guard phase == .running, ticket > persistedTicket else { return false }
        persistedTicket = ticket
        return true
    }
}
