import JobKit
import JobKitTestSupport
import Testing

/// A value behind a lock that tasks can wait on: `until(_:_:)` suspends until a condition on the
/// value holds, and the `withLock` that makes it true resumes it — nothing polls.
///
/// **Threading.** Call anything from any thread or task. A condition runs under the lock, on the
/// thread of the `withLock` that changed the value (or of `until`, for its first check): it must be
/// a quick, pure look at the value it is given — never a call back into this box. Waiters are
/// resumed after the lock is released, each exactly once.
///
/// ```swift
/// let requests = Watched<[URLRequest]>([])
/// requests.withLock { $0.append(request) }               // on the transport's thread
/// await requests.until("four requests") { $0.count == 4 } // in the test
/// ```
final class Watched<Value: Sendable>: Sendable {
    private struct Waiter {
        let id: Int
        let condition: @Sendable (Value) -> Bool
        let continuation: CheckedContinuation<Bool, Never>
    }

    private struct State {
        var value: Value
        var waiters: [Waiter] = []
        var nextID = 0
    }

    private let state: LockedBox<State>

    init(_ value: Value) {
        state = .make(State(value: value))
    }

    /// The value now.
    var current: Value { state.withLock { $0.value } }

    /// Runs `body` with exclusive access to the value, then resumes every waiter whose condition the
    /// value now meets.
    func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        var met: [CheckedContinuation<Bool, Never>] = []
        let result = try state.withLock { state in
            let result = try body(&state.value)
            guard !state.waiters.isEmpty else { return result }
            let value = state.value
            state.waiters.removeAll { waiter in
                guard waiter.condition(value) else { return false }
                met.append(waiter.continuation)
                return true
            }
            return result
        }
        for continuation in met { continuation.resume(returning: true) }
        return result
    }

    /// What `body` reads of the value, under the lock (it changes nothing, so no waiter is checked).
    func read<Result>(_ body: (Value) throws -> Result) rethrows -> Result {
        try state.withLock { try body($0.value) }
    }

    /// Suspends until `condition` holds for the value: checked at once, then after each `withLock`.
    /// A safety deadline (`timeout`, on the real clock) turns a product that never gets there into a
    /// recorded issue instead of a hung test; the normal path never waits for it. Returns whether the
    /// condition was met.
    @discardableResult
    func until(
        _ what: String, timeout: Duration = safetyDeadline, sourceLocation: SourceLocation = #_sourceLocation,
        _ condition: @escaping @Sendable (Value) -> Bool
    ) async -> Bool {
        let id = state.withLock { state in
            defer { state.nextID += 1 }
            return state.nextID
        }
        let deadline = LockedBox<Task<Void, Never>?>.make(nil)
        let met = await withCheckedContinuation { continuation in
            let now = state.withLock { state in
                if condition(state.value) { return true }
                state.waiters.append(Waiter(id: id, condition: condition, continuation: continuation))
                return false
            }
            if now { return continuation.resume(returning: true) }
            // Armed after the waiter is in the list: its expiry always finds it, or finds it resumed.
            deadline.withLock {
                $0 = Task { [self] in
                    guard (try? await Task.sleep(for: timeout)) != nil else { return }
                    expire(id)
                }
            }
        }
        deadline.withLock { $0 }?.cancel()
        if !met { Issue.record("timed out waiting until \(what)", sourceLocation: sourceLocation) }
        return met
    }

    /// Resumes waiter `id` as not met, unless it was resumed already.
    private func expire(_ id: Int) {
        let continuation = state.withLock { state -> CheckedContinuation<Bool, Never>? in
            guard let index = state.waiters.firstIndex(where: { $0.id == id }) else { return nil }
            return state.waiters.remove(at: index).continuation
        }
        continuation?.resume(returning: false)
    }
}
