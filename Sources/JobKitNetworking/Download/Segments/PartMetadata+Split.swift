import Foundation

extension PartMetadata {
    /// What a segmented download resumes from this metadata, decided without touching the disk: the
    /// metadata to go on with (after a restart of the machine, the map as of the last flush), and
    /// whether it must be written again first (it names another boot, or none); nil: start over.
    ///
    /// A map is resumed only when it is of the same download (URL, or item), has a validator and
    /// the same total, and no segment claims bytes beyond the `.part`'s end (`partLength`).
    func resumableSplit(
        boot: String?, url: URL, item: UInt64?, partLength: Int64
    ) -> (metadata: PartMetadata, rewrite: Bool)? {
        guard segments != nil else { return nil }
        var metadata = self
        let restarted = !isWrittenInBoot(boot)
        if restarted {
            guard let synced = syncedSegments, synced.length == segments?.length else { return nil }
            metadata.segments = synced
        }
        guard let map = metadata.segments, metadata.validator != nil, metadata.total == map.length,
            metadata.url == url.absoluteString || (item != nil && metadata.item == item),
            partLength <= map.length,
            map.segments.allSatisfy({ $0.done == 0 || $0.start + $0.done <= partLength })
        else { return nil }
        return (metadata, restarted || metadata.boot == nil)
    }
}
