import JobKitTestSupport
import Testing

@testable import JobKitCLI

/// The rows behind every form of the display, and the changes it reports.
@Suite struct TransferBoardTests {
    @Test func reportsStatusChangesAndProgressAndNothingWhenNothingChanged() {
        var board = TransferBoard()
        var row = TransferRow(id: 1, name: "a", totalBytes: 10)
        #expect(board.update(row)?.kind == .status)
        #expect(board.update(row) == nil)
        row.status = .running
        #expect(board.update(row)?.kind == .status)
        row.bytesDone = 5
        #expect(board.update(row)?.kind == .progress)
    }

    @Test func aFinalRowCanStartAgain() {
        var board = TransferBoard()
        board.update(TransferRow(id: 1, name: "a", status: .failed(reason: "x")))
        #expect(board.update(TransferRow(id: 1, name: "a", status: .queued))?.kind == .status)
        #expect(board.row(id: 1)?.status == .queued)
    }

    @Test func totalsSaturateInsteadOfOverflowingAndAreUnknownWithOneUnknownSize() {
        var board = TransferBoard()
        board.update(TransferRow(id: 1, name: "a", bytesDone: .max, totalBytes: .max, status: .completed))
        board.update(TransferRow(id: 2, name: "b", bytesDone: .max, totalBytes: .max, status: .completed))
        board.update(TransferRow(id: 4, name: "d", bytesDone: 5, totalBytes: nil, status: .failed(reason: "x")))
        #expect(board.totals.bytesDone == .max && board.totals.totalBytes == .max, "a failed row's bytes do not count")
        board.update(TransferRow(id: 3, name: "c", bytesDone: 1, totalBytes: nil, status: .running))
        #expect(board.totals.totalBytes == nil)
        #expect(board.totals.completed == 2 && board.totals.failed == 1 && board.totals.active == 1)
    }

    @Test func timeLeftOfTheTotalComesFromTheRunningSpeeds() {
        var board = TransferBoard()
        board.update(TransferRow(id: 1, name: "a", bytesDone: 0, totalBytes: 100, bytesPerSecond: 10, status: .running))
        board.update(TransferRow(id: 2, name: "b", bytesDone: 0, totalBytes: 100, bytesPerSecond: 10, status: .running))
        #expect(board.totals.bytesPerSecond == 20)
        #expect(board.totals.secondsRemaining == 10)
    }
}
