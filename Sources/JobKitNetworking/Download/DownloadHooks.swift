import Foundation
import Logging

/// What a download tells its owner beyond its progress fraction (`DownloadManager`'s bytes, checksum
/// and journal).
struct DownloadHooks: Sendable {
    /// A response starts filling the `.part` at this offset (0, or where a validated resume
    /// continues), with this total when the server said: once per attempt that writes.
    /// Called on the transport's thread (see `Download`).
    var began: @Sendable (_ offset: Int64, _ total: Int64?) -> Void
    /// `count` more bytes were written to the `.part`. Called on the transport's thread.
    var received: @Sendable (_ count: Int) -> Void
    /// The `.part` (at this path, this long) is complete and about to be renamed over the
    /// destination (synced first with `.system` durability): throwing fails the download instead, leaving the `.part`. Called on the
    /// run's queue, never the delegate queue.
    var beforeFinalize: @Sendable (_ part: PartFile, _ length: Int64) throws -> Void
    /// The run's connections went down to this many (it does not split, splits into fewer ranges, or
    /// a range finished): the owner may give the rest of its slots to others. Only ever lower; called
    /// on the transport's thread, once per lowering (`useConnections`).
    var connectionsUsed: @Sendable (_ count: Int) -> Void = { _ in }
    /// The connections the run may open, kept by the run (`ConnectionSlots`); nil: the `connections`
    /// each split was made with.
    var slots: ConnectionSlots?
    /// The speed limits the body is read at (through AsyncHTTPClient); nil: none.
    var throttle: Throttle?
    /// The bytes a `.part` is written between two flushes with `.system` durability
    /// (`PartFile.syncInterval`; a test shortens it).
    var syncInterval = PartFile.syncInterval
    /// A split's smallest segment, and the bytes between two writes of its map
    /// (`SegmentedDownload.minimumSegmentSize`, 1 MiB; a test shrinks it to split small files).
    var segmentSize = SegmentedDownload.minimumSegmentSize
    /// Where the download logs its requests and responses (`debug`), with the item's metadata.
    var logger = Logger(label: "jobkit.downloads", factory: { _ in SwiftLogNoOpLogHandler() })

    /// The run opens at most `count` connections from now on: lowers its slots, and tells the owner
    /// when they went down.
    func useConnections(_ count: Int) {
        if slots?.lower(to: count) ?? true { connectionsUsed(count) }
    }
}
