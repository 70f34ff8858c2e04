import Foundation
import Testing

@testable import JobKitNetworking

@Suite struct PartMetadataSplitTests {
    private let url = URL(string: "http://example.test/f.bin")!

    private func metadata(boot: String? = "b1", done: Int64 = 100, synced: Int64? = nil) -> PartMetadata {
        var map = SegmentMap.split(length: 4000, into: 4)!
        _ = map.record(done, in: 0)
        var syncedMap: SegmentMap?
        if let synced {
            syncedMap = SegmentMap.split(length: 4000, into: 4)!
            _ = syncedMap!.record(synced, in: 0)
        }
        return PartMetadata(
            url: url.absoluteString, item: 7, etag: "\"v1\"", total: 4000, segments: map, boot: boot,
            syncedSegments: syncedMap)
    }

    @Test func theSameBootResumesTheMapAsItIsAndWritesNothing() throws {
        let resumed = try #require(metadata().resumableSplit(boot: "b1", url: url, item: 7, partLength: 100))
        #expect(resumed.metadata.segments?.doneBytes == 100 && !resumed.rewrite)
    }

    @Test func anotherBootResumesOnlyTheFlushedMapAndWritesItAgain() throws {
        let resumed = try #require(
            metadata(done: 900, synced: 300).resumableSplit(boot: "b2", url: url, item: 7, partLength: 900))
        #expect(resumed.metadata.segments?.doneBytes == 300 && resumed.rewrite)
        #expect(metadata(done: 900).resumableSplit(boot: "b2", url: url, item: 7, partLength: 900) == nil)
    }

    @Test func anOlderJobKitsMapIsResumedInAKnownBootAndStampedAgain() throws {
        let resumed = try #require(metadata(boot: nil).resumableSplit(boot: "b1", url: url, item: 7, partLength: 100))
        #expect(resumed.rewrite)
        #expect(metadata(boot: nil).resumableSplit(boot: nil, url: url, item: 7, partLength: 100) == nil)
    }

    @Test func anotherDownloadOrABadMapStartsOver() {
        let other = URL(string: "http://example.test/g.bin")!
        #expect(metadata().resumableSplit(boot: "b1", url: other, item: 7, partLength: 100) != nil, "the same item")
        #expect(metadata().resumableSplit(boot: "b1", url: other, item: 8, partLength: 100) == nil)
        #expect(metadata().resumableSplit(boot: "b1", url: url, item: 7, partLength: 50) == nil, "bytes past the end")
        #expect(
            metadata().resumableSplit(boot: "b1", url: url, item: 7, partLength: 5000) == nil, "longer than the file")
        var noValidator = metadata()
        noValidator.etag = nil
        #expect(noValidator.resumableSplit(boot: "b1", url: url, item: 7, partLength: 100) == nil)
        var single = metadata()
        single.segments = nil
        #expect(single.resumableSplit(boot: "b1", url: url, item: 7, partLength: 100) == nil)
    }
}
