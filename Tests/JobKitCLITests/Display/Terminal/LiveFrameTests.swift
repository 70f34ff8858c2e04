import JobKitTestSupport
import Testing

@testable import JobKitCLI

/// Frames of the live display rendered to strings for given states.
@Suite struct LiveFrameTests {
    private func board(_ rows: [TransferRow]) -> TransferBoard {
        var board = TransferBoard()
        for row in rows { board.update(row) }
        return board
    }

    private let mebibyte: Int64 = 1 << 20

    @Test func aFrameShowsEachRunningRowAndATotalLine() {
        let frame = LiveFrame.lines(
            for: board([
                TransferRow(
                    id: 1, name: "ubuntu.iso", bytesDone: 42 * mebibyte, totalBytes: 100 * mebibyte,
                    bytesPerSecond: 5 * Double(mebibyte), secondsRemaining: 11.6, status: .running),
                TransferRow(id: 2, name: "notes.txt", bytesDone: 2048, totalBytes: nil, status: .running),
                TransferRow(id: 3, name: "done.bin", bytesDone: 10, totalBytes: 10, status: .completed),
                TransferRow(id: 4, name: "later.bin", totalBytes: 10),
            ]), width: 100, maxRows: 10)
        #expect(
            frame == [
                "ubuntu.iso  [===========>                  ]  42%  42.0 MiB/100.0 MiB  5.0 MiB/s  0:12",
                "notes.txt   [                              ]  --%  2.0 KiB  --  --:--",
                "total       [                              ]  --%  42.0 MiB  5.0 MiB/s  --:--  1/4 done",
            ])
    }

    @Test func retryingAndPausedRowsSayWhy() {
        let lines = LiveFrame.lines(
            for: board([
                TransferRow(id: 1, name: "a", totalBytes: 10, status: .retrying(attempt: 2, reason: "HTTP 503")),
                TransferRow(id: 2, name: "b", bytesDone: 5, totalBytes: 10, status: .paused),
            ]), width: 80, maxRows: 10)
        #expect(lines[0].hasPrefix("a ") && lines[0].contains("retry 2: HTTP 503"))
        #expect(lines[1].contains("paused") && lines[1].contains(" 50%"))
        #expect(lines[2].contains("0/2 done"))
    }

    @Test func moreRowsThanTheLimitEndInACount() {
        let rows = (1...30).map { TransferRow(id: $0, name: "f\($0)", totalBytes: 10, status: .running) }
        let lines = LiveFrame.lines(for: board(rows), width: 80, maxRows: 5)
        #expect(lines.count == 6)
        #expect(lines[4] == "  … 26 more")
        #expect(lines[5].hasPrefix("total"))
    }

    @Test func everyWidthGivesLinesThatFitWithoutTrapping() {
        let rows = [
            TransferRow(
                id: 1, name: String(repeating: "写真🎬e\u{301}", count: 200), bytesDone: .max, totalBytes: .max,
                bytesPerSecond: .infinity, secondsRemaining: .nan, status: .running),
            TransferRow(id: 2, name: "", bytesDone: -4, totalBytes: 0, bytesPerSecond: -1, status: .running),
            TransferRow(id: 3, name: "x\u{1B}[2J\n", bytesDone: 7, totalBytes: nil, status: .paused),
            TransferRow(
                id: 4, name: "y", totalBytes: .max,
                status: .retrying(attempt: .max, reason: String(repeating: "why ", count: 100))),
        ]
        for width in [-1, 0, 1, 2, 3, 5, 8, 13, 20, 40, 79, 80, 200, 10_000] {
            for line in LiveFrame.lines(for: board(rows), width: width, maxRows: 10) {
                #expect(DisplayWidth.of(line) <= max(1, width - 1), "width \(width): \(line)")
                #expect(!line.contains("\u{1B}") && !line.contains("\n"))
            }
        }
    }

    @Test func aNarrowTerminalDropsTheBarAndTheBytesFirst() {
        let row = TransferRow(
            id: 1, name: "video.mov", bytesDone: 50, totalBytes: 100, bytesPerSecond: 1024, secondsRemaining: 3,
            status: .running)
        let wide = LiveFrame.line(for: row, width: 79)
        #expect(wide.contains("[") && wide.contains("50 B/100 B"))
        let narrow = LiveFrame.line(for: row, width: 40)
        #expect(narrow == "video.mov  50%  1.0 KiB/s  0:03", "no bar, no bytes")
        let tiny = LiveFrame.line(for: row, width: 20)
        #expect(tiny == "video.mov  50%")
    }

    @Test func theBarFillsWithTheFraction() {
        #expect(LiveFrame.bar(0, cells: 10) == "[          ]")
        #expect(LiveFrame.bar(0.5, cells: 10) == "[====>     ]")
        #expect(LiveFrame.bar(1, cells: 10) == "[==========]")
        #expect(LiveFrame.bar(2, cells: 4) == "[====]")
        #expect(LiveFrame.bar(nil, cells: 3) == "[   ]")
        #expect(LiveFrame.bar(.nan, cells: 0) == "[]")
    }
}
