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

    /// The validator for `If-Range`: the ETag when there is a strong one, else Last-Modified.
    var validator: String? {
        if let etag, !etag.hasPrefix("W/") { return etag }
        return lastModified
    }
}
