import Foundation
import JobKit
import Testing

/// How long a test waits for an event before it gives up: a safety net, never the way a test
/// passes. The normal path waits for the event itself; this only turns a product (or a test) that
/// never gets there into a failure of that test, naming what it waited for, instead of a hung run.
/// Generous: a full parallel run on two cores, with other work on the machine and the thread
/// sanitizer, makes everything many times slower than on a quiet machine.
package let safetyDeadline: Duration = .seconds(120)

/// The deadline of a wait for a child process to end: longer than `safetyDeadline`, as a child
/// under the sanitizer, started beside every other test, can take minutes of its own.
package let childProcessDeadline: Duration = .seconds(300)

/// A wait that passed its safety deadline: thrown (or returned as a failure) by the waits of the
/// test support, so that the test fails naming what never happened.
package struct WaitTimedOut: Error, CustomStringConvertible {
    package let what: String
    package let timeout: Duration

    package init(_ what: String, timeout: Duration) {
        self.what = what
        self.timeout = timeout
    }

    package var description: String { "timed out after \(timeout) waiting for \(what)" }
}

/// What a waiting test hands the code it waits for, in place of a `CheckedContinuation`: resume it
/// once, from any thread (later calls are ignored; so is a call after the deadline).
package struct Resumer<T: Sendable>: Sendable {
    fileprivate let deliver: @Sendable (T) -> Void

    package func resume(returning value: T) { deliver(value) }
}

extension Resumer where T == Void {
    package func resume() { deliver(()) }
}

/// Awaits one callback, as `withCheckedContinuation` does, with a deadline: `start` is given a
/// `Resumer` to resume once, from any thread. Returns its value, or — if `timeout` (on the real
/// clock) passes first — records an issue naming `what` and returns nil. Nothing is resumed under
/// a lock.
///
/// ```swift
/// let result = await awaitCallback("the run's handler") { continuation in
///     job.perform(resultQueue: queue) { continuation.resume(returning: $0) }
/// }
/// ```
@discardableResult
package func awaitCallback<T: Sendable>(
    _ what: String, timeout: Duration = safetyDeadline, sourceLocation: SourceLocation = #_sourceLocation,
    _ start: (Resumer<T>) -> Void
) async -> T? {
    let once = OneShot<T>()
    start(Resumer { once.deliver($0) })
    let value = await once.wait(timeout: timeout)
    if value == nil {
        Issue.record("\(WaitTimedOut(what, timeout: timeout))", sourceLocation: sourceLocation)
    }
    return value
}

/// `awaitCallback`, throwing `WaitTimedOut` (and recording nothing more) when the deadline passes.
package func awaitCallbackOrThrow<T: Sendable>(
    _ what: String, timeout: Duration = safetyDeadline, _ start: (Resumer<T>) -> Void
) async throws -> T {
    let once = OneShot<T>()
    start(Resumer { once.deliver($0) })
    guard let value = await once.wait(timeout: timeout) else { throw WaitTimedOut(what, timeout: timeout) }
    return value
}

/// Blocks this thread until `semaphore` is signalled or `timeout` passes; returns whether it was
/// signalled. For job bodies and helper threads (never on the cooperative pool: see `offThePool`).
package func wait(for semaphore: DispatchSemaphore, timeout: Duration = safetyDeadline) -> Bool {
    semaphore.wait(timeout: .now() + .nanoseconds(Int(timeout / .nanoseconds(1)))) == .success
}

extension DispatchSemaphore {
    /// Waits, off the cooperative pool, until the semaphore is signalled; after `timeout` records an
    /// issue naming `what` and returns false.
    package func waitOffThePool(
        _ what: String, timeout: Duration = safetyDeadline, sourceLocation: SourceLocation = #_sourceLocation
    ) async -> Bool {
        let signalled = await offThePool { [self] in JobKitTestSupport.wait(for: self, timeout: timeout) }
        if !signalled {
            Issue.record("\(WaitTimedOut(what, timeout: timeout))", sourceLocation: sourceLocation)
        }
        return signalled
    }
}

/// One value, delivered once from any thread, awaited once with a deadline.
final class OneShot<T: Sendable>: Sendable {
    private enum State {
        case empty
        case waiting(CheckedContinuation<T?, Never>)
        case delivered(T)
        case over
    }

    private let state = LockedBox<State>.make(.empty)

    /// Hands `value` to the waiter (now, or when it comes); ignored after the first delivery or the deadline.
    func deliver(_ value: T) {
        let waiter = state.withLock { state -> CheckedContinuation<T?, Never>? in
            switch state {
            case .empty:
                state = .delivered(value)
                return nil
            case .waiting(let continuation):
                state = .over
                return continuation
            case .delivered, .over:
                return nil
            }
        }
        waiter?.resume(returning: value)
    }

    /// The value, or nil once `timeout` passed without one. Called once.
    func wait(timeout: Duration) async -> T? {
        let deadline = LockedBox<Task<Void, Never>?>.make(nil)
        let value = await withCheckedContinuation { (continuation: CheckedContinuation<T?, Never>) in
            let ready = state.withLock { state -> T?? in
                switch state {
                case .delivered(let value):
                    state = .over
                    return .some(value)
                case .empty:
                    state = .waiting(continuation)
                    return nil
                case .waiting, .over:
                    preconditionFailure("OneShot awaited twice")
                }
            }
            if let ready { return continuation.resume(returning: ready) }
            // Armed once the waiter is stored: its expiry finds it, or finds it resumed.
            deadline.withLock {
                $0 = Task { [self] in
                    guard (try? await Task.sleep(for: timeout)) != nil else { return }
                    expire()
                }
            }
        }
        deadline.withLock { $0 }?.cancel()
        return value
    }

    private func expire() {
        let waiter = state.withLock { state -> CheckedContinuation<T?, Never>? in
            guard case .waiting(let continuation) = state else { return nil }
            state = .over
            return continuation
        }
        waiter?.resume(returning: nil)
    }
}
