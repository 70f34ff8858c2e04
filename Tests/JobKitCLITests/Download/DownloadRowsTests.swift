import Foundation
import JobKitNetworking
import JobKitTestSupport
import Testing

@testable import JobKitCLI

/// `DownloadManager` items as rows of the display, and the frames they make.
@Suite struct DownloadRowsTests {
    private func item(_ state: DownloadManager.State, received: Int64 = 512, expected: Int64? = 1024)
        -> DownloadManager.Item
    {
        DownloadManager.Item(
            id: .init(rawValue: 3), url: URL(string: "http://127.0.0.1/files/a.bin")!, name: "a.bin",
            directory: URL(fileURLWithPath: "/tmp"), state: state,
            progress: .init(received: received, expected: expected, bytesPerSecond: 256, secondsRemaining: 2))
    }

    @Test func everyStateHasItsRow() {
        #expect(DownloadRows.row(for: item(.pending)).status == .queued)
        let running = DownloadRows.row(for: item(.running))
        #expect(running.status == .running && running.bytesDone == 512 && running.totalBytes == 1024)
        #expect(running.bytesPerSecond == 256 && running.secondsRemaining == 2 && running.id == 3)
        #expect(DownloadRows.row(for: item(.verifying)).status == .running)
        #expect(DownloadRows.row(for: item(.suspended)).status == .paused)
        #expect(DownloadRows.row(for: item(.completed)).status == .completed)
        #expect(DownloadRows.row(for: item(.cancelled)).status == .cancelled)
        let failure = DownloadManager.ItemError(kind: .httpStatus, message: "HTTP 404 Not Found for x", status: 404)
        #expect(DownloadRows.row(for: item(.failed(failure))).status == .failed(reason: "HTTP 404 Not Found for x"))
        #expect(DownloadRows.row(for: item(.pending)).bytesPerSecond == 0, "speed only while running")
    }

    @Test func aRunningDownloadOfUnknownLengthRendersWithoutATotal() {
        var board = TransferBoard()
        board.update(DownloadRows.row(for: item(.running, received: 2048, expected: nil)))
        let lines = LiveFrame.lines(for: board, width: 80, maxRows: 10)
        #expect(lines[0].hasPrefix("a.bin") && lines[0].contains("--%  2.0 KiB"), "\(lines[0])")
    }
}
