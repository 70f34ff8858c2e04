import Foundation
import Testing

@testable import JobKitNetworking

/// What a `DownloadList` shows, as a value: the rows, the two lists and the completion order.
@Suite struct DownloadListModelTests {
    typealias ItemID = DownloadManager.ItemID

    func item(_ id: UInt64, _ state: DownloadManager.State, received: Int64 = 0) -> DownloadManager.Item {
        DownloadManager.Item(
            id: ItemID(rawValue: id), url: URL(string: "http://example.com/\(id)")!, name: "f\(id)",
            directory: URL(fileURLWithPath: "/tmp"), state: state,
            progress: .init(received: received, expected: 100, bytesPerSecond: 50, secondsRemaining: 1))
    }

    func update(_ items: [DownloadManager.Item], events: [DownloadManager.Event] = []) -> DownloadManager.Update {
        DownloadManager.Update(events: events, items: items, totals: .init(received: 7))
    }

    @Test func rowsCarryStateBytesSpeedAndTimeLeft() throws {
        var model = DownloadListModel()
        model.apply(update([item(1, .running, received: 25)]))
        let row = try #require(model.items.first)
        #expect(row == item(1, .running, received: 25), "the row is the manager's item")
        #expect(row.progress.received == 25 && row.progress.expected == 100 && row.percent == 25)
        #expect(row.progress.bytesPerSecond == 50 && row.progress.secondsRemaining == 1)
        #expect(model.totals.received == 7)
    }

    @Test func aCompletedItemMovesToTheTopOfTheCompletedList() {
        var model = DownloadListModel()
        // 1 and 2 were completed before the list began: older, the newest id first.
        model.apply(update([item(1, .completed), item(2, .completed), item(3, .running), item(4, .pending)]))
        #expect(model.completed.map(\.id.rawValue) == [2, 1])
        #expect(model.inProgress.map(\.id.rawValue) == [3, 4])
        // 4 completes, then 3: 3 is the newest.
        let all = [item(1, .completed), item(2, .completed), item(3, .completed), item(4, .completed)]
        model.apply(update(all, events: [.changed(item(4, .completed)), .changed(item(3, .completed))]))
        #expect(model.completed.map(\.id.rawValue) == [3, 4, 2, 1])
        #expect(model.inProgress.isEmpty)
        // A removed item leaves both lists.
        model.apply(update([all[0], all[1], all[3]], events: [.removed(item(3, .completed))]))
        #expect(model.completed.map(\.id.rawValue) == [4, 2, 1])
    }

    @Test func failedSuspendedAndCancelledItemsStayInProgress() {
        var model = DownloadListModel()
        let items = [item(1, .suspended), item(2, .cancelled), item(3, .verifying)]
        model.apply(update(items))
        #expect(model.inProgress.map(\.id.rawValue) == [1, 2, 3])
        #expect(model.completed.isEmpty)
    }

    @Test func aCompletedRowIsAHundredPercent() {
        var row = item(1, .completed, received: 10)
        #expect(row.fraction == 1 && row.percent == 100, "whatever the server said of the length")
        row.state = .running
        #expect(row.fraction == 0.1 && row.percent == 10)
        row.progress.expected = nil
        #expect(row.fraction == nil && row.percent == nil)
        row.progress.expected = 0
        #expect(row.fraction == 1 && row.percent == 100, "an empty file is whole")
        row.progress = .init(received: 99_999, expected: 100_000)
        #expect(row.percent == 99, "100 only once complete")
        row.progress = .init(received: .max, expected: 3)
        #expect(row.fraction == 1, "never beyond 1")
    }
}
