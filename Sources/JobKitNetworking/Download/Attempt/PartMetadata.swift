/// What is kept beside a `.part` to prove that a later resume continues the same resource.
///
/// Whose `.part` it is: the URL's (a plain `Job.download`), or a `DownloadManager` item's, whose URL
/// may change (`replaceURL`, a refreshed signed URL) while the item stays the same. Either way a
/// resume still needs the validator: the identity only says which `.part` may be offered to it.
struct PartMetadata: Codable, Equatable {
    var url: String
    /// The manager's item whose `.part` this is (ids are never reused in a directory); nil for a
    /// plain download, or a `.part` of an older JobKit.
    var item: UInt64?
    var etag: String?
    var lastModified: String?
    /// The full length of the resource, when the server said.
    var total: Int64?
    /// The segments of a download over several connections (`SegmentedDownload`); nil for one
    /// fetched from start to end. A `.part` with segments has holes: only a segmented download
    /// resumes it (one connection starts it over).
    var segments: SegmentMap?
    /// The machine's boot (`BootIdentity`) when the metadata was last written: every byte of the
    /// `.part` past `synced` was written in it. `PartFile.writeMetadata` sets it, to the empty
    /// string when the boot could not be read. Nil in the metadata of an older JobKit.
    var boot: String?
    /// The length of the `.part` as of its last flush to disk (`fsync`, made with `.system`
    /// durability every `PartFile.syncInterval` bytes): what survives a power loss whatever the
    /// kernel had written back. Nil when it was never flushed (or by an older JobKit).
    var synced: Int64?
    /// For a segmented download: the map (`segments`) as it was when the `.part` was last flushed
    /// to disk: the progress that survives a power loss. Nil when it was never flushed.
    var syncedSegments: SegmentMap?

    /// Whether the bytes of the `.part` past `synced` may be trusted as written, in a machine whose
    /// running boot is `current`: only when they were written in that same boot (the page cache
    /// keeps what a killed process wrote). After a restart of the machine (an operating-system
    /// crash, a power loss) the kernel may have written back a file's later pages and not its
    /// earlier ones, which then read as zeros under an unchanged size. An unknown boot, either
    /// side, counts as a restart — except in the metadata of an older JobKit, which names none:
    /// it is trusted while the running boot can be told, as that JobKit trusted it.
    func isWrittenInBoot(_ current: String?) -> Bool {
        guard let current, !current.isEmpty else { return false }
        guard let boot else { return true }
        return boot == current
    }

    /// The `Last-Modified` of a response (its headers, names lowercased) when it is a strong
    /// validator, else nil. RFC 9110 (§8.8.2.2, §13.1.5): a date is strong only when the response's
    /// `Date` is at least a second after it; a file served in the second it was written may change
    /// again within that second under the same date, so a date equal to the `Date` (or later, or
    /// without a `Date`, or unreadable) proves nothing: it is never sent in `If-Range`.
    static func strongLastModified(_ headers: [String: String]) -> String? {
        guard let text = headers["last-modified"], text.count < 100, let sent = headers["date"], sent.count < 100,
            let modified = HTTPDate.parse(text.trimmingCharacters(in: .whitespaces)),
            let date = HTTPDate.parse(sent.trimmingCharacters(in: .whitespaces)),
            date.timeIntervalSince(modified) >= 1
        else { return nil }
        return text
    }

    /// The validator for `If-Range`: the ETag when there is a strong one, else Last-Modified.
    var validator: String? {
        if let etag, !etag.hasPrefix("W/") { return etag }
        return lastModified
    }
}
