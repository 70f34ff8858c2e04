import Foundation

/// What a response means for a segmented download: pure rules, no I/O.
///
/// - The first request (`bytes=0-`) splits the file only when it is answered `206` from byte 0
///   with a total, not content-coded, and with a validator: a strong ETag, or else a strong
///   Last-Modified date (at least a second before the response's `Date`: the validator a
///   one-connection resume trusts too). Anything else falls back to one
///   connection: a `206` of the whole file is written as it comes (`isWholeFile`), any other answer
///   is asked again without a range.
/// - A segment's request (`bytes=A-B` with `If-Range`) continues the file only when answered `206`
///   with exactly `A-B/TOTAL` of the same total, carrying the validator sent, not content-coded.
///   A `200`, a `416`, another range or total, a missing or different validator: the file changed
///   or the server does not honour ranges, and it starts over on one connection. Any other status
///   fails the download with it.
enum SegmentAnswer: Equatable {
    /// The body is the bytes asked for.
    case accept
    /// The file starts over from byte 0, on one connection.
    case startOver
    /// The download fails with this status.
    case fail(status: Int)

    /// The metadata of a split when the answer to the first request allows one; nil: one connection.
    static func split(
        status: Int, headers: [String: String], url: URL, item: UInt64?
    ) -> PartMetadata? {
        guard status == 206, !DownloadAttemptStateMachine.isEncoded(headers),
            let range = ContentRange(headers["content-range"]), let total = range.total, total > 0,
            range.range?.lowerBound == 0
        else { return nil }
        let metadata = PartMetadata(
            url: url.absoluteString, item: item, etag: headers["etag"],
            lastModified: PartMetadata.strongLastModified(headers),
            total: total)
        return metadata.validator == nil ? nil : metadata
    }

    /// Whether an answer to the first request (`bytes=0-`) that does not split the file is the
    /// whole file, for one connection to write as it comes: a `206` of every byte (`0-LAST/TOTAL`),
    /// not content-coded. Anything else is asked again, without a range.
    static func isWholeFile(status: Int, headers: [String: String]) -> Bool {
        guard status == 206, !DownloadAttemptStateMachine.isEncoded(headers),
            let range = ContentRange(headers["content-range"]), let total = range.total, let bounds = range.range
        else { return false }
        return bounds.lowerBound == 0 && bounds.upperBound == total - 1
    }

    /// Judges the answer to a segment's request for `asked` (a range of the file) of a file as
    /// `metadata` describes it.
    static func judge(
        status: Int, headers: [String: String], asked: Range<Int64>, metadata: PartMetadata
    ) -> SegmentAnswer {
        switch status {
        case 206:
            guard let range = ContentRange(headers["content-range"]), let bounds = range.range,
                bounds.lowerBound == asked.lowerBound, bounds.upperBound == asked.upperBound - 1,
                range.total == metadata.total, !DownloadAttemptStateMachine.isEncoded(headers),
                carries(metadata, headers)
            else { return .startOver }
            return .accept
        case 200..<300, 416:
            return .startOver
        default:
            return .fail(status: status)
        }
    }

    /// Whether the answer carries the validator `If-Range` sent.
    private static func carries(_ metadata: PartMetadata, _ headers: [String: String]) -> Bool {
        guard let validator = metadata.validator else { return false }
        if validator == metadata.etag { return headers["etag"] == validator }
        return headers["last-modified"] == validator
    }
}
