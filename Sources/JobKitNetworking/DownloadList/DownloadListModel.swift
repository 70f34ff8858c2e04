/// What a `DownloadList` shows, as a value: the rows of the latest update, and the order in which
/// items completed (for the completed list, newest first). Pure: no actor, no clock.
struct DownloadListModel: Sendable, Equatable {
    typealias ItemID = DownloadManager.ItemID

    /// Every row, in the order added.
    private(set) var items: [DownloadManager.Item] = []
    /// The totals of the latest update.
    private(set) var totals = DownloadManager.Totals()
    /// When each item was seen completing (higher is newer); items completed before the list began
    /// have none and count as older, newest id first.
    private var completions: [ItemID: UInt64] = [:]
    private var completionCount: UInt64 = 0

    /// Takes an update: its events in order (for the completion order), then its snapshot.
    mutating func apply(_ update: DownloadManager.Update) {
        for event in update.events {
            switch event {
            case .changed(let item) where item.state == .completed:
                completionCount += 1
                completions[item.id] = completionCount
            case .removed(let item):
                completions[item.id] = nil
            case .changed, .allFinished:
                break
            }
        }
        items = update.items
        totals = update.totals
    }

    /// Every item that is not completed (pending, running, verifying, suspended, failed, cancelled),
    /// in the order added.
    var inProgress: [DownloadManager.Item] { items.filter { $0.state != .completed } }

    /// The completed items, the most recently completed first.
    var completed: [DownloadManager.Item] {
        items.filter { $0.state == .completed }.sorted { lhs, rhs in
            (completions[lhs.id] ?? 0, lhs.id) > (completions[rhs.id] ?? 0, rhs.id)
        }
    }
}
