import Foundation
import JobKit
import JobKitTestSupport
import Testing

@testable import JobKitNetworking

extension DownloadManager {
    /// Suspends until `condition` holds for an update of `updates()`: checked at once on the items
    /// and totals as they are now (the first update), then on each update delivered after — nothing
    /// polls. Returns that update; nil, with an issue recorded, when the updates end first (the
    /// manager closed) or the safety deadline (`timeout`, on the real clock) passes first.
    ///
    /// Progress alone is delivered at most once per `progressInterval` on the manager's scheduler: with
    /// a `TestScheduler`, a condition on bytes alone waits for the test to move time.
    ///
    /// ```swift
    /// await manager.until("two run") { $0.totals.running == 2 }
    /// ```
    @discardableResult
    func until(
        _ what: String, timeout: Duration = safetyDeadline, sourceLocation: SourceLocation = #_sourceLocation,
        _ condition: @escaping @Sendable (Update) -> Bool
    ) async -> Update? {
        let updates = updates()
        let met = await withTaskGroup(of: Update?.self) { group in
            group.addTask {
                for await update in updates where condition(update) { return update }
                return nil
            }
            group.addTask {
                try? await Task.sleep(for: timeout)
                return nil
            }
            let first = await group.next() ?? nil
            group.cancelAll()
            return first
        }
        if met == nil { Issue.record("never saw \(what)", sourceLocation: sourceLocation) }
        return met
    }

    /// Suspends until item `id` meets `condition` in an update (see `until(_:_:)`); returns it as it was then.
    @discardableResult
    func until(
        _ what: String, item id: ItemID, sourceLocation: SourceLocation = #_sourceLocation,
        _ condition: @escaping @Sendable (Item) -> Bool
    ) async -> Item? {
        let update = await until(what, sourceLocation: sourceLocation) { update in
            update.items.first { $0.id == id }.map(condition) ?? false
        }
        return update?.items.first { $0.id == id }
    }
}

extension DownloadManager.Update {
    /// Item `id` as it is in this update; nil when there is no such item.
    func item(_ id: DownloadManager.ItemID) -> DownloadManager.Item? { items.first { $0.id == id } }
}
