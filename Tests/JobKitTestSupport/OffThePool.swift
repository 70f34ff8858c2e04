import Dispatch

/// Runs `body`, which may block (a semaphore, a child process), on a thread of GCD's, and returns
/// its value. An async test that blocks directly holds one of the few threads every test's tasks
/// share (two on a two-core machine): in a full parallel run the other tests then stall behind it.
package func offThePool<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
    await withCheckedContinuation { continuation in
        DispatchQueue.global().async { continuation.resume(returning: body()) }
    }
}

/// `withCheckedContinuation` whose body runs on a thread of GCD's, so that it may block (wait for a
/// job's body to start, then cancel it) without holding a thread the tests' tasks share.
package func withContinuationOffThePool<T: Sendable>(
    _ body: @escaping @Sendable (CheckedContinuation<T, Never>) -> Void
) async -> T {
    await withCheckedContinuation { continuation in
        DispatchQueue.global().async { body(continuation) }
    }
}
