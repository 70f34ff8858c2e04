/// What is kept beside a `.part` to prove that a later resume continues the same resource.
struct PartMetadata: Codable, Equatable {
    var url: String
    var etag: String?
    var lastModified: String?
    /// The full length of the resource, when the server said.
    var total: Int64?

    /// The validator for `If-Range`: the ETag when there is a strong one, else Last-Modified.
    var validator: String? {
        if let etag, !etag.hasPrefix("W/") { return etag }
        return lastModified
    }
}
