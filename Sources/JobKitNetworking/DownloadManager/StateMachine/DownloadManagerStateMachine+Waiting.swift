import Foundation
import JobKit

extension DownloadManagerStateMachine {
    // MARK: Waiting

    mutating func makeWaiterToken() -> Int {
        nextWaiter += 1
        openWaiters.insert(nextWaiter)
        return nextWaiter
    }

    /// Keeps the waiter until the next drain; returns the summary to resume it with at once when
    /// nothing is active, the manager is closed, or the wait was cancelled.
    mutating func addWaiter(
        _ token: Int, _ continuation: CheckedContinuation<DownloadManager.Summary, Never>, now: UInt64
    ) -> DownloadManager.Summary? {
        guard activeCount > 0, !isClosed, openWaiters.contains(token) else {
            openWaiters.remove(token)
            return summary(now: now)
        }
        waiters[token] = continuation
        return nil
    }

    /// The waiting task was cancelled: its continuation and the summary now, if it was waiting.
    mutating func cancelWaiter(_ token: Int, now: UInt64) -> (
        CheckedContinuation<DownloadManager.Summary, Never>, DownloadManager.Summary
    )? {
        openWaiters.remove(token)
        guard let waiter = waiters.removeValue(forKey: token) else { return nil }
        return (waiter, summary(now: now))
    }
}
