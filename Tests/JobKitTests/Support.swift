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
    /// Performs a run and waits (without blocking a thread) for its outcome.
    func outcome(on queue: DispatchQueue = .global(), resultQueue: DispatchQueue = resultQueue) async
        -> Result<Value, any Error>
    {
        await withCheckedContinuation { continuation in
            perform(on: queue, resultQueue: resultQueue) { continuation.resume(returning: $0) }
        }
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

func isCancelled<V>(_ result: Result<V, any Error>) -> Bool {
    (result.failureError as? JobError) == .cancelled
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

/// A run's outcome, awaited after the run was started.
final class OutcomeBox<Value: Sendable>: Sendable {
    private let state = Locked<(result: Result<Value, any Error>?, waiter: CheckedContinuation<Void, Never>?)>(
        (nil, nil))

    func set(_ result: Result<Value, any Error>) {
        state.withLock {
            $0.result = result; $0.waiter?.resume(); $0.waiter = nil
        }
    }

    var result: Result<Value, any Error> {
        get async {
            await withCheckedContinuation { continuation in
                state.withLock { if $0.result != nil { continuation.resume() } else { $0.waiter = continuation } }
            }
            return state.current.result!
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

/// Whether this process runs under the thread sanitizer, whose shadow memory inflates resident-set
/// measurements: memory bounds are looser there, never absent.
let isThreadSanitized: Bool = dlsym(dlopen(nil, RTLD_NOW), "__tsan_init") != nil
