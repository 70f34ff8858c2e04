import Foundation
import JobKitTestSupport
import Testing

@testable import JobKitCLI

/// Plain lines for a pipe, JSON objects for scripts.
@Suite struct TransferEventFormatTests {
    private func event(_ status: TransferRow.Status, kind: TransferBoard.Event.Kind = .status) -> TransferBoard.Event {
        TransferBoard.Event(
            kind: kind,
            row: TransferRow(
                id: 7, name: "a\u{1B}b.bin", bytesDone: 1024, totalBytes: 2048, bytesPerSecond: 512.4,
                secondsRemaining: 1.2, status: status))
    }

    @Test func aPipeGetsOneLinePerStatusChangeAndNoEscapes() {
        #expect(TransferEventFormat.plainLine(for: event(.queued)) == nil)
        #expect(TransferEventFormat.plainLine(for: event(.running)) == "started ab.bin (2.0 KiB)")
        #expect(TransferEventFormat.plainLine(for: event(.running, kind: .progress)) == nil)
        #expect(
            TransferEventFormat.plainLine(for: event(.retrying(attempt: 2, reason: "HTTP 503")))
                == "retrying ab.bin (attempt 2): HTTP 503")
        #expect(TransferEventFormat.plainLine(for: event(.paused)) == "paused ab.bin")
        #expect(TransferEventFormat.plainLine(for: event(.completed)) == "completed ab.bin (1.0 KiB)")
        #expect(TransferEventFormat.plainLine(for: event(.failed(reason: "no\nway"))) == "failed ab.bin: noway")
        #expect(TransferEventFormat.plainLine(for: event(.cancelled)) == "cancelled ab.bin")
    }

    @Test func jsonIsOneObjectPerEventWithEveryFieldNamed() throws {
        let line = try #require(TransferEventFormat.jsonLine(TransferEventFormat.JSONEvent(event(.running))))
        #expect(
            line
                == #"{"bytes":1024,"eta":2,"event":"running","id":7,"name":"a\u001bb.bin","speed":512,"total":2048}"#)
        let failed = try #require(
            TransferEventFormat.jsonLine(TransferEventFormat.JSONEvent(event(.failed(reason: "HTTP 404")))))
        #expect(failed.contains(#""event":"failed""#) && failed.contains(#""reason":"HTTP 404""#))
        let progress = try #require(
            TransferEventFormat.jsonLine(TransferEventFormat.JSONEvent(event(.running, kind: .progress))))
        #expect(progress.contains(#""event":"progress""#))
    }

    @Test func unknownAndNonFiniteNumbersAreNullOrZeroNeverAnEncodingFailure() throws {
        let row = TransferRow(
            id: 1, name: "x", bytesDone: .max, totalBytes: nil, bytesPerSecond: .nan, secondsRemaining: .infinity,
            status: .running)
        let line = try #require(
            TransferEventFormat.jsonLine(TransferEventFormat.JSONEvent(.init(kind: .progress, row: row))))
        let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        #expect(object["total"] is NSNull && object["eta"] is NSNull)
        #expect((object["speed"] as? Int) == 0)
        #expect(!line.contains("\n"))
    }
}
