import Foundation
import JobKit

extension DownloadManagerStateMachine {
    // MARK: Waiting

    /// A new waiter's id: open until it waits or its wait is cancelled.
    mutating func makeWaiterID() -> Int { waiters.makeToken() }

    /// Keeps the waiter until the next drain; returns the summary to resume it with at once when
    /// nothing is active, the manager is closed, or the wait was cancelled.
    mutating func addWaiter(
        _ id: Int, _ continuation: CheckedContinuation<DownloadManager.Summary, Never>, now: UInt64
    ) -> DownloadManager.Summary? {
        waiters.wait(id, continuation, isReached: activeCount == 0 || isClosed) ? nil : summary(now: now)
    }

    /// The waiting task was cancelled: its continuation and the summary now, if it was waiting.
    mutating func cancelWaiter(_ id: Int, now: UInt64) -> (
        CheckedContinuation<DownloadManager.Summary, Never>, DownloadManager.Summary
    )? {
        waiters.cancel(id).map { ($0, summary(now: now)) }
    }
}
