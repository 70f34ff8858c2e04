import Dispatch
import JobKit

/// Seed 002: many downloads through a `JobQueue`, at most `maxConcurrent` at once, each reporting
/// pending → running n% → completed on the main queue, and one notice when all are done.
struct DownloadScenario: Sendable {
    static let steps = [0.05, 0.2, 0.4, 0.6, 0.8]

    var jobs: Int
    var maxConcurrent: Int
    var timing: SimulatedTiming
    var tracers: [any JobTracer] = []

    /// Runs the scenario; `print` is called on the main queue. Returns whether every download completed.
    func run(print: @escaping @Sendable (String) -> Void) async -> Bool {
        print("downloads: \(jobs) jobs, at most \(maxConcurrent) at once")
        guard jobs > 0 else {
            print("All download tasks have been completed")
            return true
        }
        let completed = LockedCounter()
        return await withCheckedContinuation { continuation in
            let queue = JobQueue<Int>(maxConcurrent: maxConcurrent) { id, state in
                switch state {
                case .pending: print("  download \(id): pending")
                case .running(let fraction) where fraction > 0:
                    print("  download \(id): running \(Int(fraction * 100))%")
                case .running: break
                case .finished:
                    completed.increment()
                    print("  download \(id): completed")
                case .failed, .cancelled: print("  download \(id): \(state)")
                }
            } onAllFinished: {
                print("All download tasks have been completed")
                continuation.resume(returning: completed.value == jobs)
            }
            for id in 1..<jobs + 1 {
                var job = download().named("download \(id)")
                for tracer in tracers { job = job.traced(by: tracer) }
                try! queue.add(job, id: id)  // ids are unique by construction
            }
        }
    }

    /// A simulated download: one timer per step, no thread held in between.
    private func download() -> Job<Void> {
        Job { controller in
            @Sendable func step(_ index: Int) {
                guard index < Self.steps.count else { return controller.finish() }
                controller.report(progress: Self.steps[index])
                controller.queue.asyncAfter(deadline: .now() + timing.nextStep()) { step(index + 1) }
            }
            step(0)
        }
    }
}

/// A counter touched only on the main queue, boxed so that closures can share it.
final class LockedCounter: @unchecked Sendable {
    // Safety: only read and written from the main queue, where every handler of the demo runs.
    private(set) var value = 0

    func increment() { value += 1 }
}
