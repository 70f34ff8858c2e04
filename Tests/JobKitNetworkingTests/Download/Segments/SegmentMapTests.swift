import Foundation
import Testing

@testable import JobKitNetworking

/// `SegmentMap`: the split, the progress, and a map read from disk as input.
@Suite struct SegmentMapTests {
    private typealias Segment = SegmentMap.Segment

    @Test func aLengthOfZeroOrBeyondTheLimitIsNotSplit() {
        #expect(SegmentMap.split(length: 0, into: 4) == nil)
        #expect(SegmentMap.split(length: -1, into: 4) == nil)
        #expect(SegmentMap.split(length: .max, into: 4) == nil)
        #expect(SegmentMap.split(length: DownloadLimits.maximumLength + 1, into: 4) == nil)
        #expect(SegmentMap.split(length: DownloadLimits.maximumLength, into: 16)?.segments.count == 16)
    }

    @Test func oneByteIsOneSegment() throws {
        let map = try #require(SegmentMap.split(length: 1, into: 4))
        #expect(map.segments == [Segment(start: 0, end: 1, done: 0)])
    }

    @Test func fewerBytesThanConnectionsMakeOneSegmentPerByte() throws {
        let map = try #require(SegmentMap.split(length: 3, into: 4))
        #expect(map.segments.map(\.length) == [1, 1, 1])
    }

    @Test func segmentsTileTheFileFirstOnesAByteLonger() throws {
        let map = try #require(SegmentMap.split(length: 10, into: 4))
        #expect(map.segments.map(\.start) == [0, 3, 6, 8])
        #expect(map.segments.map(\.end) == [3, 6, 8, 10])
    }

    @Test func theMinimumSizeAndCountBoundTheSplit() throws {
        #expect(SegmentMap.split(length: 3 << 20, into: 8, minimumSize: 1 << 20)?.segments.count == 3)
        #expect(SegmentMap.split(length: 1 << 20, into: 8, minimumSize: 1 << 20)?.segments.count == 1)
        #expect(SegmentMap.split(length: 1000, into: 0)?.segments.count == 1)
        #expect(SegmentMap.split(length: 1000, into: 100)?.segments.count == SegmentMap.maximumSegments)
    }

    @Test func progressIsRecordedWithinEachSegment() throws {
        var map = try #require(SegmentMap.split(length: 10, into: 2))
        let recorded = [
            map.record(3, in: 0), map.record(3, in: 0), map.record(1, in: 2), map.record(-1, in: 1),
        ]
        // Past the segment's end, no such segment, a negative count: refused.
        #expect(recorded == [true, false, false, false])
        #expect(map.doneBytes == 3)
        #expect(map.nextMissing?.index == 0)
        #expect(map.nextMissing?.range == 3..<5)
        let more = [map.record(2, in: 0), map.record(5, in: 1)]
        #expect(more == [true, true])
        #expect(map.isComplete && map.nextMissing == nil && map.doneBytes == 10)
    }

    @Test func encodingRoundTrips() throws {
        var map = try #require(SegmentMap.split(length: 100, into: 4))
        _ = map.record(7, in: 2)
        let decoded = try JSONDecoder().decode(SegmentMap.self, from: JSONEncoder().encode(map))
        #expect(decoded == map)
        var metadata = PartMetadata(url: "http://a/b", etag: "\"x\"", total: 100)
        metadata.segments = map
        #expect(try JSONDecoder().decode(PartMetadata.self, from: JSONEncoder().encode(metadata)) == metadata)
    }

    @Test(arguments: [
        #"{"length":10,"segments":[{"start":0,"end":5,"done":0},{"start":4,"end":10,"done":0}]}"#,  // overlap
        #"{"length":10,"segments":[{"start":0,"end":5,"done":0},{"start":6,"end":10,"done":0}]}"#,  // gap
        #"{"length":10,"segments":[{"start":0,"end":5,"done":6},{"start":5,"end":10,"done":0}]}"#,  // done > length
        #"{"length":10,"segments":[{"start":0,"end":5,"done":-1},{"start":5,"end":10,"done":0}]}"#,
        #"{"length":10,"segments":[{"start":0,"end":5,"done":0},{"start":5,"end":20,"done":0}]}"#,  // past the end
        #"{"length":10,"segments":[{"start":0,"end":5,"done":0}]}"#,  // short of the end
        #"{"length":10,"segments":[{"start":5,"end":10,"done":0},{"start":0,"end":5,"done":0}]}"#,  // out of order
        #"{"length":0,"segments":[]}"#,
        #"{"length":9223372036854775807,"segments":[{"start":0,"end":9223372036854775807,"done":0}]}"#,
        #"{"length":10,"segments":[{"start":0,"end":0,"done":0},{"start":0,"end":10,"done":0}]}"#,  // empty
    ])
    func aPlantedOrCorruptMapIsRefused(_ json: String) {
        #expect(throws: (any Error).self) { try JSONDecoder().decode(SegmentMap.self, from: Data(json.utf8)) }
        let metadata = #"{"url":"http://a/b","etag":"\"x\"","total":10,"segments":"# + json + "}"
        #expect(throws: (any Error).self) { try JSONDecoder().decode(PartMetadata.self, from: Data(metadata.utf8)) }
    }

    @Test func aSplitPartIsNeverResumedByOneConnection() throws {
        var metadata = PartMetadata(url: "http://a/b", etag: "\"x\"", total: 10)
        metadata.segments = SegmentMap.split(length: 10, into: 2)
        let url = try #require(URL(string: "http://a/b"))
        #expect(
            DownloadAttemptStateMachine.resumeOffset(partLength: 10, metadata: metadata, url: url, blindResume: true)
                == nil)
    }
}
