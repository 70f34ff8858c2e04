import Foundation
import Testing

/// Runs `body`, which may block (a semaphore, a child process), on a thread of its own, and returns
/// its value. An async test that blocks directly holds one of the few threads every test's tasks
/// share (two on a two-core machine): in a full parallel run the other tests then stall behind it.
/// Not a GCD queue either: GCD's global queues are as narrow on Linux, and Foundation notices a
/// child's exit through them, so two blocked waits there never return.
///
/// Also for long computations (a million-level loop): run on the pool they hold one of its threads
/// for their whole length, and two of them at once stall every async test; on threads of their own
/// the system shares the cores between them and everything else. The thread has an 8 MiB stack, as
/// a process's main thread.
package func offThePool<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
    await withCheckedContinuation { continuation in
        startThread { continuation.resume(returning: body()) }
    }
}

/// Starts `body` on a new thread with an 8 MiB stack.
private func startThread(_ body: @escaping @Sendable () -> Void) {
    let thread = Thread(block: body)
    thread.stackSize = 8 << 20
    thread.start()
}

/// `awaitCallback` whose body runs on a thread of its own (see `offThePool`), so that it may block
/// (wait for a job's body to start, then cancel it) without holding a shared thread. Nil, with an
/// issue naming `what`, when the body never resumes by the deadline.
package func withContinuationOffThePool<T: Sendable>(
    _ what: String, timeout: Duration = safetyDeadline, sourceLocation: SourceLocation = #_sourceLocation,
    _ body: @escaping @Sendable (Resumer<T>) -> Void
) async -> T? {
    await awaitCallback(what, timeout: timeout, sourceLocation: sourceLocation) { continuation in
        startThread { body(continuation) }
    }
}
