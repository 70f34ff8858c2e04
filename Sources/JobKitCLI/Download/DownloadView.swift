import ArgumentParser
import Dispatch
import Foundation
import JobKitNetworking

/// What the display shows of a manager's updates: this run's items, and items restored from the journal that
/// are still to be downloaded (an earlier run's leftovers, which the manager resumes) — not an earlier run's
/// finished items.
@MainActor
final class DownloadView {
    private let display: TransferDisplay
    /// The items this run added (or found in the journal).
    var runIDs: Set<DownloadManager.ItemID> = []
    private var shown: Set<DownloadManager.ItemID> = []
    /// Added to each item's id for its row: the managers of one run number their items alike.
    private let rowOffset: Int
    /// The subfolder its items are in (`a/b`), shown before their names; nil: the output folder.
    private let subfolder: String?

    init(display: TransferDisplay, rowOffset: Int = 0, subfolder: String? = nil) {
        self.display = display
        self.rowOffset = rowOffset
        self.subfolder = subfolder
    }

    /// Shows the events of `update`, then the progress of every running item.
    func show(_ update: DownloadManager.Update) {
        let now = Dictionary(update.items.map { ($0.id, $0.state) }, uniquingKeysWith: { $1 })
        for event in update.events {
            guard case .changed(let item) = event else { continue }
            // An earlier run's end, restored from the journal and already queued again: not news.
            if !item.state.isActive, now[item.id]?.isActive == true, !shown.contains(item.id) { continue }
            show(item)
        }
        for item in update.items where item.state == .running || item.state == .verifying { show(item) }
    }

    private func show(_ item: DownloadManager.Item) {
        guard runIDs.contains(item.id) || shown.contains(item.id) || item.state.isActive else { return }
        shown.insert(item.id)
        var row = DownloadRows.row(for: item)
        row.id &+= rowOffset
        if let subfolder { row.name = subfolder + "/" + row.name }
        display.update(row)
    }
}
