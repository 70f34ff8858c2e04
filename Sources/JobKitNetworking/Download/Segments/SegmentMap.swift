/// How a file fetched over several connections is split, and how much of each part is written: the
/// segment map kept in the `.part.meta` of a segmented download, so that a process killed at any
/// moment resumes every segment where it stopped.
///
/// Pure: no file, no socket. Its rules:
/// - the segments tile the file: the first starts at byte 0, each starts where the one before ends,
///   the last ends at `length`; none is empty;
/// - a segment's `done` counts the bytes written from its start, from 0 to its own length;
/// - at most `maximumSegments` segments, and a `length` from 1 to `DownloadLimits.maximumLength`.
///
/// A map read from disk is input: decoding checks every rule, and a map that breaks one fails to
/// decode (the download then starts over: a planted map never makes a write outside the file).
struct SegmentMap: Codable, Equatable, Sendable {
    /// One range of the file, fetched by one connection.
    struct Segment: Codable, Equatable, Sendable {
        /// Its first byte.
        var start: Int64
        /// The byte after its last.
        var end: Int64
        /// The bytes written from `start`.
        var done: Int64

        /// Its length in bytes.
        var length: Int64 { end - start }
        /// The bytes still to fetch, as a range of the file; nil when it is complete.
        var missing: Range<Int64>? { done < length ? (start + done)..<end : nil }
    }

    /// Why a map is refused.
    struct Invalid: Error, Equatable {
        var reason: String
    }

    /// The most segments a file is split into (aria2's most connections per server).
    static let maximumSegments = 16

    /// The file's length.
    let length: Int64
    /// The segments, in file order.
    private(set) var segments: [Segment]

    /// A map of these segments, checked against every rule.
    init(length: Int64, segments: [Segment]) throws(Invalid) {
        guard (1...DownloadLimits.maximumLength).contains(length) else {
            throw Invalid(reason: "a length of \(length), not one from 1 to \(DownloadLimits.maximumLength)")
        }
        guard (1...Self.maximumSegments).contains(segments.count) else {
            throw Invalid(reason: "\(segments.count) segments, not 1 to \(Self.maximumSegments)")
        }
        var next: Int64 = 0
        for segment in segments {
            guard segment.start == next, segment.end > segment.start, segment.end <= length else {
                throw Invalid(reason: "a segment \(segment.start)..<\(segment.end) that does not follow byte \(next)")
            }
            guard (0...segment.length).contains(segment.done) else {
                throw Invalid(reason: "\(segment.done) bytes done of a segment of \(segment.length)")
            }
            next = segment.end
        }
        guard next == length else { throw Invalid(reason: "segments that end at \(next), not at \(length)") }
        self.length = length
        self.segments = segments
    }

    /// `length` split into `count` segments of nearly equal size (the first ones a byte longer), none
    /// shorter than `minimumSize` bytes: fewer segments when the file is small, one at least. Nil
    /// when there is nothing to split: a `length` of 0 or beyond `DownloadLimits.maximumLength`.
    /// A `count` below 1 counts as 1, above `maximumSegments` as `maximumSegments`.
    static func split(length: Int64, into count: Int, minimumSize: Int64 = 1) -> SegmentMap? {
        guard (1...DownloadLimits.maximumLength).contains(length) else { return nil }
        let byMinimum = length / max(minimumSize, 1)
        let pieces = Int64(min(max(count, 1), maximumSegments))
        let parts = max(1, min(pieces, byMinimum))
        let size = length / parts
        let longer = length % parts
        var segments: [Segment] = []
        var start: Int64 = 0
        for index in 0..<parts {
            let end = start + size + (index < longer ? 1 : 0)
            segments.append(Segment(start: start, end: end, done: 0))
            start = end
        }
        return try? SegmentMap(length: length, segments: segments)
    }

    /// The bytes written, in all segments.
    var doneBytes: Int64 { segments.reduce(0) { $0 + $1.done } }

    /// Every segment is complete.
    var isComplete: Bool { segments.allSatisfy { $0.missing == nil } }

    /// The ranges still to fetch, each with its segment's index, in file order.
    var missing: [(index: Int, range: Range<Int64>)] {
        segments.indices.compactMap { index in segments[index].missing.map { (index, $0) } }
    }

    /// The first segment with bytes still to fetch, and its missing range; nil when complete.
    var nextMissing: (index: Int, range: Range<Int64>)? { missing.first }

    /// Records `count` more bytes written at the end of segment `index`'s done part. Returns false,
    /// recording nothing, when the index is not a segment's or the bytes would pass the segment's end.
    mutating func record(_ count: Int64, in index: Int) -> Bool {
        guard segments.indices.contains(index), count >= 0, count <= segments[index].length - segments[index].done
        else { return false }
        segments[index].done += count
        return true
    }

    // MARK: Codable, validated

    private enum CodingKeys: String, CodingKey {
        case length, segments
    }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let length = try container.decode(Int64.self, forKey: .length)
        let segments = try container.decode([Segment].self, forKey: .segments)
        try self.init(length: length, segments: segments)
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(length, forKey: .length)
        try container.encode(segments, forKey: .segments)
    }
}
