import Foundation
import Testing

@testable import JobKitNetworking

/// `SegmentAnswer`: which answers split a file, and which continue a segment.
@Suite struct SegmentAnswerTests {
    private let url = URL(string: "http://example.com/file")!
    private let metadata = PartMetadata(url: "http://example.com/file", etag: "\"v1\"", total: 100)

    @Test func aRangeFromZeroWithATotalAndAStrongValidatorSplits() {
        let headers = ["content-range": "bytes 0-99/100", "etag": "\"v1\""]
        #expect(SegmentAnswer.split(status: 206, headers: headers, url: url, item: nil)?.total == 100)
        #expect(SegmentAnswer.split(status: 200, headers: ["etag": "\"v1\""], url: url, item: nil) == nil)
        #expect(
            SegmentAnswer.split(
                status: 206, headers: ["content-range": "bytes 0-99/100", "etag": "W/\"v1\""], url: url, item: nil)
                == nil, "a weak ETag alone")
        #expect(
            SegmentAnswer.split(
                status: 206,
                headers: [
                    "content-range": "bytes 0-99/100", "last-modified": "Mon, 01 Jan 2024 00:00:00 GMT",
                    "date": "Mon, 01 Jan 2024 00:00:01 GMT",
                ],
                url: url, item: nil) != nil, "a Last-Modified a second before the Date is strong")
        #expect(
            SegmentAnswer.split(
                status: 206,
                headers: [
                    "content-range": "bytes 0-99/100", "last-modified": "Mon, 01 Jan 2024 00:00:00 GMT",
                    "date": "Mon, 01 Jan 2024 00:00:00 GMT",
                ],
                url: url, item: nil) == nil, "a weak date (the Date's own second) never splits a file")
        #expect(
            SegmentAnswer.split(
                status: 206,
                headers: ["content-range": "bytes 0-99/100", "etag": "\"v1\"", "content-encoding": "gzip"],
                url: url, item: nil) == nil)
        #expect(
            SegmentAnswer.split(
                status: 206, headers: ["content-range": "bytes 0-99/*", "etag": "\"v1\""], url: url, item: nil)
                == nil)
    }

    @Test func onlyARangeOfEveryByteIsTheWholeFile() {
        #expect(SegmentAnswer.isWholeFile(status: 206, headers: ["content-range": "bytes 0-99/100"]))
        #expect(!SegmentAnswer.isWholeFile(status: 206, headers: ["content-range": "bytes 0-49/100"]), "a part")
        #expect(!SegmentAnswer.isWholeFile(status: 206, headers: ["content-range": "bytes 0-99/*"]))
        #expect(!SegmentAnswer.isWholeFile(status: 206, headers: [:]))
        #expect(
            !SegmentAnswer.isWholeFile(
                status: 206, headers: ["content-range": "bytes 0-99/100", "content-encoding": "gzip"]))
        #expect(!SegmentAnswer.isWholeFile(status: 200, headers: [:]), "asked again without a range")
    }

    @Test func aSegmentContinuesOnlyWithItsRangeTotalAndValidator() {
        func judge(_ status: Int, _ headers: [String: String]) -> SegmentAnswer {
            SegmentAnswer.judge(status: status, headers: headers, asked: 50..<75, metadata: metadata)
        }
        #expect(judge(206, ["content-range": "bytes 50-74/100", "etag": "\"v1\""]) == .accept)
        #expect(judge(206, ["content-range": "bytes 50-74/100", "etag": "\"v2\""]) == .startOver)
        #expect(judge(206, ["content-range": "bytes 50-74/100"]) == .startOver)
        #expect(judge(206, ["content-range": "bytes 51-74/100", "etag": "\"v1\""]) == .startOver)
        #expect(judge(206, ["content-range": "bytes 50-74/101", "etag": "\"v1\""]) == .startOver)
        #expect(judge(200, ["etag": "\"v1\""]) == .startOver)
        #expect(judge(416, [:]) == .startOver)
        #expect(judge(503, [:]) == .fail(status: 503))
    }
}
