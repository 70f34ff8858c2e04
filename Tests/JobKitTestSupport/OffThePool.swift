import Foundation

/// Runs `body`, which may block (a semaphore, a child process), on a thread of its own, and returns
/// its value. An async test that blocks directly holds one of the few threads every test's tasks
/// share (two on a two-core machine): in a full parallel run the other tests then stall behind it.
/// Not a GCD queue either: GCD's global queues are as narrow on Linux, and Foundation notices a
/// child's exit through them, so two blocked waits there never return.
package func offThePool<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
    await withCheckedContinuation { continuation in
        Thread.detachNewThread { continuation.resume(returning: body()) }
    }
}

/// `withCheckedContinuation` whose body runs on a thread of its own (see `offThePool`), so that it
/// may block (wait for a job's body to start, then cancel it) without holding a shared thread.
package func withContinuationOffThePool<T: Sendable>(
    _ body: @escaping @Sendable (CheckedContinuation<T, Never>) -> Void
) async -> T {
    await withCheckedContinuation { continuation in
        Thread.detachNewThread { body(continuation) }
    }
}
