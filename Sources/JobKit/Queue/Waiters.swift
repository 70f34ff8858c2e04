/// Tasks waiting for their owner to reach a point — a `JobQueue` idle, a download manager drained —
/// kept in the owner's state, behind its lock.
///
/// A wait takes a token first (`makeToken`), then its continuation (`wait`): the task may be
/// cancelled between the two, and `cancel` on a token that is not waiting yet closes it, so that its
/// `wait` returns at once instead of waiting for good. The owner resumes what `wait`, `cancel` and
/// `takeAll` return, outside its lock.
///
/// The one waiter bookkeeping of the package: `JobQueue.waitUntilIdle()` and
/// `DownloadManager.waitUntilFinished()`.
package struct Waiters<Value> {
    private var waiting: [Int: CheckedContinuation<Value, Never>] = [:]
    /// Tokens handed out and not resolved yet (resumed, or cancelled before they waited).
    private var open: Set<Int> = []
    private var lastToken = 0

    /// No waiter.
    package init() {}

    /// How many continuations wait.
    package var count: Int { waiting.count }

    /// A new token, open until it waits and is resumed, or is cancelled.
    package mutating func makeToken() -> Int {
        lastToken += 1
        open.insert(lastToken)
        return lastToken
    }

    /// Keeps `continuation` until `takeAll`; returns false when the caller must resume it at once: the
    /// point is reached already (`isReached`), or the token was cancelled.
    package mutating func wait(
        _ token: Int, _ continuation: CheckedContinuation<Value, Never>, isReached: Bool
    ) -> Bool {
        guard !isReached, open.contains(token) else {
            open.remove(token)
            return false
        }
        waiting[token] = continuation
        return true
    }

    /// The waiting task was cancelled: its continuation to resume, if it was waiting. A token not yet
    /// waiting is closed, so that its `wait` returns false.
    package mutating func cancel(_ token: Int) -> CheckedContinuation<Value, Never>? {
        open.remove(token)
        return waiting.removeValue(forKey: token)
    }

    /// The point is reached: every waiting continuation, to resume; none is kept.
    package mutating func takeAll() -> [CheckedContinuation<Value, Never>] {
        guard !waiting.isEmpty else { return [] }
        for token in waiting.keys { open.remove(token) }
        defer { waiting = [:] }
        return Array(waiting.values)
    }
}

extension Waiters: Sendable {}
