import Dispatch
import Foundation
import JobKitTestSupport
import Testing

@testable import JobKit

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A queue that can tell whether code is running on it, on Linux too (where `===` on queues lies).
final class TaggedQueue: Sendable {
    let queue: DispatchQueue
    private let key = DispatchSpecificKey<ObjectIdentifier>()

    init(_ label: String, attributes: DispatchQueue.Attributes = []) {
        queue = DispatchQueue(label: label, attributes: attributes)
        queue.setSpecific(key: key, value: ObjectIdentifier(self))
    }

    var isCurrent: Bool { DispatchQueue.getSpecific(key: key) == ObjectIdentifier(self) }
}

/// Counts how many are in flight and the highest count seen.
final class InFlightMeter: Sendable {
    private let state = Locked((current: 0, peak: 0))

    func enter() {
        state.withLock {
            $0.current += 1; $0.peak = max($0.peak, $0.current)
        }
    }
    func leave() { state.withLock { $0.current -= 1 } }
    var peak: Int { state.current.peak }
}

let resultQueue = DispatchQueue(label: "test.results")

extension Job {
    /// Performs a run and waits (without blocking a thread) for its outcome. A run whose handler
    /// never comes fails the test by the safety deadline (an issue, and `WaitTimedOut` as the result).
    /// `timeout` is longer for the million-level runs: a million levels of work, sharing two cores
    /// with every other test, can take minutes.
    func outcome(
        on queue: DispatchQueue = .global(), resultQueue: DispatchQueue = resultQueue,
        timeout: Duration = safetyDeadline, sourceLocation: SourceLocation = #_sourceLocation
    ) async -> Result<Value, any Error> {
        let result = await awaitCallback("the run's handler", timeout: timeout, sourceLocation: sourceLocation) {
            continuation in
            perform(on: queue, resultQueue: resultQueue) { continuation.resume(returning: $0) }
        }
        return result ?? .failure(WaitTimedOut("the run's handler", timeout: timeout))
    }

    /// A job that finishes with `value` after `delay`, completed by a timer (no thread held meanwhile).
    static func after(_ delay: DispatchTimeInterval, value: Value) -> Job {
        Job { controller in
            controller.queue.asyncAfter(deadline: .now() + delay) { controller.finish(value) }
        }
    }
}

struct TestError: Error, Equatable {
    let id: Int
}

extension Result {
    var failureError: Failure? {
        if case .failure(let error) = self { return error }
        return nil
    }
}

func isCancelled<V>(_ result: Result<V, any Error>?) -> Bool {
    (result?.failureError as? JobError) == .cancelled
}

/// Whether `part` is `whole` with some elements left out, the rest in the same order.
func isOrderedSubsequence<Element: Equatable>(_ part: [Element], of whole: [Element]) -> Bool {
    var remaining = whole[...]
    for element in part {
        guard let index = remaining.firstIndex(of: element) else { return false }
        remaining = remaining[(index + 1)...]
    }
    return true
}

/// A run's outcome, awaited (once) after the run was started.
final class OutcomeBox<Value: Sendable>: Sendable {
    private let once = OneShotResult<Value>()

    func set(_ result: Result<Value, any Error>) { once.deliver(result) }

    /// The outcome; `WaitTimedOut`, with an issue recorded, when the handler never came by the
    /// safety deadline.
    var result: Result<Value, any Error> {
        get async { await once.result }
    }
}

/// `awaitCallback` split in two: delivered from one place, awaited (once) in another.
final class OneShotResult<Value: Sendable>: Sendable {
    private let state = Locked<(result: Result<Value, any Error>?, waiter: Resumer<Result<Value, any Error>>?)>(
        (nil, nil))

    func deliver(_ result: Result<Value, any Error>) {
        let waiter = state.withLock { state -> Resumer<Result<Value, any Error>>? in
            if state.waiter == nil { state.result = result }
            return state.waiter
        }
        waiter?.resume(returning: result)
    }

    var result: Result<Value, any Error> {
        get async {
            let result = await awaitCallback("the run's handler") { continuation in
                let ready = state.withLock { state -> Result<Value, any Error>? in
                    if state.result == nil { state.waiter = continuation }
                    return state.result
                }
                if let ready { continuation.resume(returning: ready) }
            }
            return result ?? .failure(WaitTimedOut("the run's handler", timeout: safetyDeadline))
        }
    }
}

extension Job {
    /// Starts a run; returns its handle at once, and its outcome to await.
    func started(on queue: DispatchQueue = .global()) -> (handle: JobHandle, outcome: OutcomeBox<Value>) {
        let box = OutcomeBox<Value>()
        let handle = perform(on: queue, resultQueue: resultQueue) { box.set($0) }
        return (handle, box)
    }
}

/// The deadline of a run of a million levels (see `outcome(timeout:)`).
let millionLevelDeadline: Duration = .seconds(900)

/// Whether this process runs under the thread sanitizer, whose shadow memory inflates resident-set
/// measurements: memory bounds are looser there, never absent.
let isThreadSanitized: Bool = dlsym(dlopen(nil, RTLD_NOW), "__tsan_init") != nil
