import Dispatch

/// Runs the jobs of tasks that prefer it (`Task(executorPreference:)`) as blocks on a simulated
/// process's serial queue, in the order they are enqueued: a task that waits for the manager
/// (`waitUntilFinished`, a consumer of `updates()`) is resumed by the manager's own hops, on that
/// queue, so the seed still orders everything a schedule runs.
final class SimulatedExecutor: TaskExecutor, @unchecked Sendable {
    // Safety: immutable; a `DispatchQueue` is thread-safe.
    private let queue: DispatchQueue

    init(queue: DispatchQueue) { self.queue = queue }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        queue.async { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
    }
}
