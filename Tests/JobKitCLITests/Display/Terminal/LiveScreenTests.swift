import JobKitTestSupport
import Testing

@testable import JobKitCLI

/// The live display as a terminal shows it: live lines redrawn in place, ended rows printed once above.
@Suite struct LiveScreenTests {
    @Test func endedRowsStayAboveAndTheLiveLinesAreRedrawnInPlace() {
        var screen = LiveScreen()
        var terminal = TerminalEmulator()
        var board = TransferBoard()
        board.update(TransferRow(id: 1, name: "a.bin", bytesDone: 1, totalBytes: 4, status: .running))
        board.update(TransferRow(id: 2, name: "b.bin", bytesDone: 0, totalBytes: 4, status: .running))
        terminal.write(screen.frame(board, width: 60))
        #expect(terminal.screen.count == 3)
        #expect(terminal.screen[0].hasPrefix("a.bin") && terminal.screen[2].hasPrefix("total"))

        board.update(TransferRow(id: 1, name: "a.bin", bytesDone: 4, totalBytes: 4, status: .completed))
        board.update(
            TransferRow(id: 2, name: "b.bin", bytesDone: 0, totalBytes: 4, status: .failed(reason: "HTTP 404")))
        terminal.write(screen.frame(board, width: 60, messages: ["note"]))
        #expect(terminal.screen.count == 4)
        #expect(terminal.screen[0] == "note")
        #expect(terminal.screen[1] == "✓ a.bin  4 B")
        #expect(terminal.screen[2] == "✗ b.bin: HTTP 404")
        #expect(terminal.screen[3].hasPrefix("total") && terminal.screen[3].contains("1/2 done, 1 failed"))

        terminal.write(screen.frame(board, width: 60))
        #expect(terminal.screen.count == 4, "an ended row is printed once")

        board.update(TransferRow(id: 2, name: "b.bin", bytesDone: 0, totalBytes: 4, status: .running))
        terminal.write(screen.frame(board, width: 60))
        board.update(TransferRow(id: 2, name: "b.bin", bytesDone: 4, totalBytes: 4, status: .completed))
        terminal.write(screen.frame(board, width: 60))
        #expect(terminal.screen[3] == "✓ b.bin  4 B", "a row that started again is printed when it ends again")
        #expect(terminal.screen.count == 5)
    }

    @Test func aFrameMovesUpOverExactlyThePreviousLiveLines() {
        var screen = LiveScreen()
        var board = TransferBoard()
        board.update(TransferRow(id: 1, name: "a", totalBytes: 4, status: .running))
        #expect(!screen.frame(board, width: 40).contains("\u{1B}[2A"))
        let second = screen.frame(board, width: 40)
        #expect(second.hasPrefix("\u{1B}[2A") && second.hasSuffix("\u{1B}[J"))
    }

    @Test func endedLinesWithoutColorHaveNoEscapes() {
        let row = TransferRow(id: 1, name: "a", bytesDone: 1, totalBytes: 1, status: .completed)
        #expect(LiveScreen.endedLine(row, width: 80, color: false) == "✓ a  1 B")
        #expect(LiveScreen.endedLine(row, width: 80, color: true) == "\u{1B}[32m✓\u{1B}[0m a  1 B")
    }
}
