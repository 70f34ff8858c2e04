import Foundation
import Testing

@testable import JobKitNetworking

/// The download attempt's decisions, transition by transition, without a socket or a file.
@Suite struct DownloadAttemptStateMachineTests {
    private let url = URL(string: "http://host/file.bin")!
    private var strong: PartMetadata {
        PartMetadata(url: url.absoluteString, etag: "\"v1\"", lastModified: nil, total: 100)
    }

    private func machine(resumingAt offset: Int64? = nil, metadata: PartMetadata? = nil) -> DownloadAttemptStateMachine
    {
        DownloadAttemptStateMachine(url: url, path: "/d/file.bin", resumingAt: offset, metadata: metadata)
    }

    private func body(_ machine: inout DownloadAttemptStateMachine, _ count: Int) throws
        -> DownloadAttemptStateMachine.BodyAction
    {
        let bytes = [UInt8](repeating: 7, count: count)
        return try bytes.withUnsafeBytes { try machine.received($0) }
    }

    /// The reason of the inconsistent response `action` throws; nil when it throws nothing.
    private func inconsistent(_ action: () throws -> Void) -> String? {
        do {
            try action()
            return nil
        } catch {
            if case .inconsistentResponse(let reason)? = (error as? DownloadError)?.kind { return reason }
            return "\(error)"
        }
    }

    // MARK: The request

    @Test func aFreshAttemptAsksForTheFileAsStored() {
        #expect(machine().requestHeaders == ["Accept-Encoding": "identity"])
    }

    @Test func aResumeAsksForTheRestWithTheValidator() {
        #expect(
            machine(resumingAt: 40, metadata: strong).requestHeaders == [
                "Accept-Encoding": "identity", "Range": "bytes=40-", "If-Range": "\"v1\"",
            ])
        let weak = PartMetadata(url: url.absoluteString, etag: "W/\"v1\"", lastModified: "Mon", total: nil)
        #expect(
            machine(resumingAt: 1, metadata: weak).requestHeaders["If-Range"] == "Mon", "a weak ETag is no validator")
        #expect(machine(resumingAt: 1).requestHeaders["If-Range"] == nil, "a blind resume sends none")
    }

    @Test func aPartIsResumedOnlyWithAValidatorForTheSameURLAndWithinItsTotal() {
        func offset(_ length: Int64, _ metadata: PartMetadata?, blind: Bool = false) -> Int64? {
            DownloadAttemptStateMachine.resumeOffset(
                partLength: length, metadata: metadata, url: url, blindResume: blind)
        }
        #expect(offset(40, strong) == 40)
        #expect(offset(0, strong) == nil)
        #expect(offset(101, strong) == nil, "longer than its total")
        #expect(offset(40, nil) == nil && offset(40, nil, blind: true) == 40)
        let other = PartMetadata(url: "http://host/other", etag: "\"v1\"", lastModified: nil, total: 100)
        #expect(offset(40, other) == nil && offset(40, other, blind: true) == nil)
        let noValidator = PartMetadata(url: url.absoluteString, etag: nil, lastModified: nil, total: 100)
        #expect(offset(40, noValidator) == nil && offset(40, noValidator, blind: true) == 40)
    }

    @Test func afterARestartOnlyTheFlushedLengthIsResumed() {
        func offset(_ length: Int64, synced: Int64?, blind: Bool = false) -> Int64? {
            var metadata = strong
            metadata.synced = synced
            return DownloadAttemptStateMachine.resumeOffset(
                partLength: length, metadata: metadata, url: url, blindResume: blind, restarted: true)
        }
        #expect(offset(40, synced: 16) == 16)
        #expect(offset(40, synced: 40) == 40)
        #expect(offset(40, synced: nil) == nil, "never flushed: start over")
        #expect(offset(40, synced: nil, blind: true) == nil, "a blind resume trusts the validator, not holes")
        #expect(offset(40, synced: 0) == nil)
        #expect(offset(10, synced: 16) == nil, "shorter than what was flushed: not the flushed .part")
        #expect(offset(0, synced: 16) == nil)
    }

    @Test func aManagersPartIsTheItemsWhateverURLItNowHasButStillNeedsTheValidator() {
        let moved = URL(string: "http://cdn.example/a.bin?signature=new")!
        func offset(_ metadata: PartMetadata, item: UInt64?) -> Int64? {
            DownloadAttemptStateMachine.resumeOffset(
                partLength: 40, metadata: metadata, url: moved, item: item, blindResume: false)
        }
        let items = PartMetadata(url: url.absoluteString, item: 7, etag: "\"v1\"", lastModified: nil, total: 100)
        #expect(offset(items, item: 7) == 40, "the same item, from its new URL")
        #expect(offset(items, item: 8) == nil, "another item's .part")
        #expect(offset(items, item: nil) == nil, "a plain download has only its URL")
        var unproven = items
        unproven.etag = nil
        #expect(offset(unproven, item: 7) == nil, "no validator, no resume")
        var fresh = DownloadAttemptStateMachine(url: moved, path: "/tmp/a.bin", resumingAt: nil, metadata: nil, item: 7)
        let action = try? fresh.received(status: 200, headers: ["content-length": "100", "etag": "\"v2\""])
        guard case .write(_, _, _, let remembered?) = action else {
            Issue.record("no metadata remembered")
            return
        }
        #expect(remembered.item == 7)
    }

    // MARK: Responses

    @Test func aWholeBodyStartsThePartAndRemembersItsValidator() throws {
        var fresh = machine()
        let action = try fresh.received(status: 200, headers: ["content-length": "100", "etag": "\"v2\""])
        let remembered = PartMetadata(url: url.absoluteString, etag: "\"v2\"", lastModified: nil, total: 100)
        #expect(action == .write(offset: 0, total: 100, truncating: false, metadata: remembered))
        var resumed = machine(resumingAt: 40, metadata: strong)
        let over = try resumed.received(status: 200, headers: ["content-length": "100"])
        #expect(
            over
                == .write(
                    offset: 0, total: 100, truncating: true, metadata: PartMetadata(url: url.absoluteString, total: 100)
                ))
    }

    @Test func aWholeBodyThatClaimsToBeAPartIsInconsistent() {
        var attempt = machine(resumingAt: 40, metadata: strong)
        let reason = inconsistent {
            _ = try attempt.received(status: 200, headers: ["content-range": "bytes 40-99/100"])
        }
        #expect(reason == "a 200 with Content-Range bytes 40-99/100")
        #expect(attempt.state == .requested)
        var fromZero = machine()
        #expect(throws: Never.self) {
            _ = try fromZero.received(status: 200, headers: ["content-range": "bytes 0-99/100"])
        }
    }

    @Test func aLengthThatIsNoLengthFailsWhateverItsSize() throws {
        for text in ["-1", "abc", "5e18", "1125899906842625", "18446744073709551616", ""] {
            var attempt = machine()
            #expect(
                inconsistent { _ = try attempt.received(status: 200, headers: ["content-length": text]) } != nil,
                "\(text)")
        }
        var fine = machine()
        #expect(throws: Never.self) {
            _ = try fine.received(status: 200, headers: ["content-length": " 1125899906842624 "])
        }
        var notFound = machine()
        #expect(try notFound.received(status: 404, headers: ["content-length": "garbage"]) == .readErrorBody)
    }

    @Test func aRangeThatContinuesThePartWithItsValidatorIsWrittenAfterIt() throws {
        var attempt = machine(resumingAt: 40, metadata: strong)
        let action = try attempt.received(status: 206, headers: ["content-range": "bytes 40-99/100", "etag": "\"v1\""])
        #expect(action == .write(offset: 40, total: 100, truncating: false, metadata: nil))
        #expect(attempt.state == .writing(written: 40, total: 100, reportedPermille: -1))
    }

    @Test func aRangeThatDoesNotContinueThePartStartsOver() throws {
        let ranges: [[String: String]] = [
            ["content-range": "bytes 41-99/100", "etag": "\"v1\""],  // not where the part ends
            ["content-range": "bytes 40-99/200", "etag": "\"v1\""],  // another total
            ["content-range": "bytes 40-99/*", "etag": "\"v1\""],  // no total
            ["content-range": "bytes 40-99/100", "etag": "\"v2\""],  // another version
            ["content-range": "bytes 40-99/100"],  // no validator: a server that ignored If-Range
            ["content-range": "bytes 40-99/100", "etag": "\"v1\"", "content-encoding": "gzip"],
            ["content-range": "garbage", "etag": "\"v1\""],
        ]
        for headers in ranges {
            var attempt = machine(resumingAt: 40, metadata: strong)
            #expect(try attempt.received(status: 206, headers: headers) == .startOver, "\(headers)")
            #expect(attempt.ended(withError: false) == .startOver)
            #expect(attempt.ended(withError: true) == .startOver, "stopped on purpose: the error is ours")
        }
        let byDate = PartMetadata(url: url.absoluteString, etag: nil, lastModified: "Mon", total: 100)
        var dated = machine(resumingAt: 40, metadata: byDate)
        #expect(
            try dated.received(status: 206, headers: ["content-range": "bytes 40-99/100", "last-modified": "Tue"])
                == .startOver)
    }

    @Test func aRangeNobodyAskedForIsUsableOnlyFromTheFirstByte() throws {
        var zero = machine()
        let action = try zero.received(status: 206, headers: ["content-range": "bytes 0-49/100"])
        #expect(
            action
                == .write(
                    offset: 0, total: 100, truncating: false,
                    metadata: PartMetadata(url: url.absoluteString, total: 100)))
        var later = machine()
        #expect(
            inconsistent { _ = try later.received(status: 206, headers: ["content-range": "bytes 10-49/100"]) } != nil)
        var none = machine()
        #expect(inconsistent { _ = try none.received(status: 206, headers: [:]) } != nil)
    }

    @Test func a416ProvesThePartCompleteOnlyWithItsTotalAndValidator() throws {
        var complete = machine(resumingAt: 100, metadata: strong)
        #expect(try complete.received(status: 416, headers: ["content-range": "bytes */100"]) == .finalizeWhenDone)
        #expect(complete.ended(withError: false) == .finalize)
        #expect(complete.ended(withError: true) == .failWithTransportError)
        var noRange = machine(resumingAt: 100, metadata: strong)
        #expect(try noRange.received(status: 416, headers: [:]) == .finalizeWhenDone)
        for headers in [["content-range": "bytes */200"], ["content-range": "garbage"]] {
            var attempt = machine(resumingAt: 100, metadata: strong)
            #expect(try attempt.received(status: 416, headers: headers) == .startOver, "\(headers)")
        }
        var short = machine(resumingAt: 60, metadata: strong)
        #expect(try short.received(status: 416, headers: ["content-range": "bytes */100"]) == .startOver)
        var blind = machine(resumingAt: 100, metadata: nil)
        #expect(try blind.received(status: 416, headers: ["content-range": "bytes */100"]) == .startOver)
        var fresh = machine()
        #expect(try fresh.received(status: 416, headers: [:]) == .readErrorBody)
    }

    @Test func aContentCodedBodyKeepsNoValidatorNorTotal() throws {
        var attempt = machine()
        let action = try attempt.received(
            status: 200, headers: ["content-length": "10", "etag": "\"v\"", "content-encoding": " GZIP "])
        #expect(
            action == .write(offset: 0, total: nil, truncating: false, metadata: PartMetadata(url: url.absoluteString)))
        #expect(try body(&attempt, 1_000) == .write(progress: nil), "decoded bytes are not measured")
        #expect(attempt.ended(withError: false) == .finalize)
        var identity = machine()
        _ = try identity.received(status: 200, headers: ["content-length": "10", "content-encoding": "identity"])
        #expect(identity.state == .writing(written: 0, total: 10, reportedPermille: -1))
    }

    // MARK: The body and the end

    @Test func progressIsReportedAtMostAThousandTimes() throws {
        var attempt = machine()
        _ = try attempt.received(status: 200, headers: ["content-length": "1000000"])
        var reports = 0
        for _ in 0..<1_000_000 / 100 {
            if case .write(let progress?) = try body(&attempt, 100) {
                reports += 1
                #expect(progress > 0 && progress <= 1)
            }
        }
        #expect(reports == 1_001, "one a permille, 0 included")
        #expect(attempt.ended(withError: false) == .finalize)
    }

    @Test func moreBytesThanAnnouncedFailBeforeTheyAreWritten() throws {
        var attempt = machine()
        _ = try attempt.received(status: 200, headers: ["content-length": "10"])
        #expect(try body(&attempt, 10) == .write(progress: 1))
        #expect(inconsistent { _ = try body(&attempt, 1) } == "more bytes than the announced 10")
        var empty = machine()
        _ = try empty.received(status: 200, headers: ["content-length": "0"])
        #expect(inconsistent { _ = try body(&empty, 1) } != nil)
        #expect(empty.ended(withError: false) == .finalize, "an empty file is complete")
    }

    @Test func fewerBytesThanAnnouncedFailTheAttempt() throws {
        var attempt = machine(resumingAt: 40, metadata: strong)
        _ = try attempt.received(status: 206, headers: ["content-range": "bytes 40-99/100", "etag": "\"v1\""])
        _ = try body(&attempt, 50)
        guard case .fail(let error) = attempt.ended(withError: false) else {
            Issue.record("not a failure")
            return
        }
        #expect(error.kind == .inconsistentResponse("got 90 of 100 bytes"))
        #expect(attempt.ended(withError: true) == .failWithTransportError, "a dropped connection is the transport's")
    }

    @Test func anErrorStatusKeepsTheStartOfItsBodyForTheMessage() throws {
        var attempt = machine()
        #expect(try attempt.received(status: 503, headers: ["retry-after": "5"]) == .readErrorBody)
        #expect(try body(&attempt, HTTPStatusError.excerptLimit + 500) == .skip)
        #expect(try body(&attempt, 10) == .skip)
        #expect(
            attempt.ended(withError: false)
                == .failWithStatus(body: Data(repeating: 7, count: HTTPStatusError.excerptLimit)))
        #expect(attempt.ended(withError: true) == .failWithTransportError)
    }

    @Test func noResponseAtAllIsAFailureOfItsOwn() {
        let attempt = machine()
        #expect(attempt.ended(withError: false) == .failWithoutResponse)
        #expect(attempt.ended(withError: true) == .failWithTransportError)
    }

    @Test func bytesBeforeAResponseOrAfterAStartOverAreNotWritten() throws {
        var attempt = machine()
        #expect(try body(&attempt, 5) == .skip)
        var over = machine(resumingAt: 40, metadata: strong)
        _ = try over.received(status: 206, headers: ["content-range": "bytes 0-99/100"])
        #expect(try body(&over, 5) == .skip)
    }
}

/// Issue 31: a `Last-Modified` is a validator only when strong (RFC 9110 §8.8.2.2).
@Suite struct DownloadAttemptWeakDateTests {
    private let url = URL(string: "http://host/file.bin")!
    private let served = "Tue, 24 Nov 2026 10:00:00 GMT"

    private func metadata(ofA200With headers: [String: String]) throws -> PartMetadata? {
        var machine = DownloadAttemptStateMachine(url: url, path: "/d/file.bin", resumingAt: nil, metadata: nil)
        let action = try machine.received(status: 200, headers: headers.merging(["content-length": "100"]) { $1 })
        guard case .write(_, _, _, let metadata) = action else { return nil }
        return metadata
    }

    @Test func aLastModifiedInTheSecondOfTheDateIsNoValidatorAndThePartStartsOver() throws {
        let weak = try #require(try metadata(ofA200With: ["last-modified": served, "date": served]))
        #expect(weak.validator == nil)
        #expect(
            DownloadAttemptStateMachine.resumeOffset(partLength: 40, metadata: weak, url: url, blindResume: false)
                == nil, "a .part known by a weak date alone is never resumed")
        let resumed = DownloadAttemptStateMachine(url: url, path: "/d/file.bin", resumingAt: nil, metadata: weak)
        #expect(resumed.requestHeaders["If-Range"] == nil)
        #expect(resumed.requestHeaders["Range"] == nil)
    }

    @Test func aLastModifiedWithoutADateOrAfterItIsNoValidator() throws {
        #expect(try metadata(ofA200With: ["last-modified": served])?.validator == nil)
        let later = "Tue, 24 Nov 2026 10:00:05 GMT"
        #expect(try metadata(ofA200With: ["last-modified": later, "date": served])?.validator == nil)
        #expect(try metadata(ofA200With: ["last-modified": "yesterday", "date": served])?.validator == nil)
    }

    @Test func aLastModifiedASecondBeforeTheDateIsStrongAndResumes() throws {
        let earlier = "Tue, 24 Nov 2026 09:59:59 GMT"
        let strong = try #require(try metadata(ofA200With: ["last-modified": earlier, "date": served]))
        #expect(strong.validator == earlier)
        let offset = DownloadAttemptStateMachine.resumeOffset(
            partLength: 40, metadata: strong, url: url, blindResume: false)
        #expect(offset == 40)
        let resumed = DownloadAttemptStateMachine(url: url, path: "/d/file.bin", resumingAt: offset, metadata: strong)
        #expect(resumed.requestHeaders["If-Range"] == earlier)
    }
}
