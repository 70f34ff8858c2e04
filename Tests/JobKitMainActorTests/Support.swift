import Dispatch
import JobKit
import Testing

/// Tags the main queue: on Linux, after `dispatchMain()` the main queue may run on a thread other than
/// the first one, so `Thread.isMainThread` cannot tell whether code runs on it; queue-specific data can.
nonisolated let mainQueueKey: DispatchSpecificKey<Bool> = {
    let key = DispatchSpecificKey<Bool>()
    DispatchQueue.main.setSpecific(key: key, value: true)
    return key
}()

/// Whether the caller runs on the main queue.
nonisolated func isOnMainQueue() -> Bool {
    DispatchQueue.getSpecific(key: mainQueueKey) == true
}

/// A queue that can tell whether code runs on it.
nonisolated final class TaggedQueue: Sendable {
    let queue: DispatchQueue
    private let key = DispatchSpecificKey<Bool>()

    init(_ label: String) {
        queue = DispatchQueue(label: label)
        queue.setSpecific(key: key, value: true)
    }

    var isCurrent: Bool { DispatchQueue.getSpecific(key: key) == true }
}

/// Suspends until `condition` holds, reading it on the main actor every 5 ms (the main queue runs the
/// deliveries meanwhile) for up to 20 s; records an issue naming `what` otherwise.
func waitUntil(_ what: String, sourceLocation: SourceLocation = #_sourceLocation, _ condition: () -> Bool) async {
    let deadline = ContinuousClock.now + .seconds(20)
    while !condition() {
        guard ContinuousClock.now < deadline else {
            Issue.record("timed out waiting until \(what)", sourceLocation: sourceLocation)
            return
        }
        try? await Task.sleep(for: .milliseconds(5))
    }
}

/// A job that reports half way, then finishes with `value` after `milliseconds`, on a timer of its
/// queue (no thread held meanwhile).
nonisolated func slowJob<Value: Sendable>(_ value: Value, milliseconds: Int = 20) -> Job<Value> {
    Job { controller in
        controller.report(progress: 0.5)
        controller.queue.asyncAfter(deadline: .now() + .milliseconds(milliseconds)) { controller.finish(value) }
    }
}

/// A failure of a test job.
nonisolated struct UploadFailed: Error, Equatable {}
