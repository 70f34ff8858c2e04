import Foundation
import JobKit

extension DownloadManagerStateMachine {
    // MARK: Waiting

    /// A new waiter's id: open until it waits or its wait is cancelled.
    mutating func makeWaiterID() -> Int {
        nextWaiter += 1
        openWaiters.insert(nextWaiter)
        return nextWaiter
    }

    /// Keeps the waiter until the next drain; returns the summary to resume it with at once when
    /// nothing is active, the manager is closed, or the wait was cancelled.
    mutating func addWaiter(
        _ id: Int, _ continuation: CheckedContinuation<DownloadManager.Summary, Never>, now: UInt64
    ) -> DownloadManager.Summary? {
        guard activeCount > 0, !isClosed, openWaiters.contains(id) else {
            openWaiters.remove(id)
            return summary(now: now)
        }
        waiters[id] = continuation
        return nil
    }

    /// The waiting task was cancelled: its continuation and the summary now, if it was waiting.
    mutating func cancelWaiter(_ id: Int, now: UInt64) -> (
        CheckedContinuation<DownloadManager.Summary, Never>, DownloadManager.Summary
    )? {
        openWaiters.remove(id)
        guard let waiter = waiters.removeValue(forKey: id) else { return nil }
        return (waiter, summary(now: now))
    }
}
