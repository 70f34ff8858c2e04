import Dispatch
import JobKit

/// Seed 002: many downloads, at most `maxConcurrent` at once, each reporting pending → running n% →
/// completed on the main queue, and one notice when all are done.
struct DownloadScenario: Sendable {
    static let steps = [0.05, 0.2, 0.4, 0.6, 0.8, 1.0]

    var jobs: Int
    var maxConcurrent: Int
    var timing: SimulatedTiming

    /// Runs the scenario; `print` is called on the main queue. Returns whether every download completed.
    func run(print: @escaping @Sendable (String) -> Void) async -> Bool {
        print("downloads: \(jobs) jobs, at most \(maxConcurrent) at once")
        for id in 1..<jobs + 1 { print("  download \(id): pending") }
        let downloads = (1..<jobs + 1).map { download(id: $0, print: print) }
        return await withCheckedContinuation { continuation in
            Job.group(downloads, maxConcurrent: maxConcurrent).perform { result in
                if case .failure(let error) = result {
                    print("downloads: failed: \(error)")
                    continuation.resume(returning: false)
                } else {
                    print("All download tasks have been completed")
                    continuation.resume(returning: true)
                }
            }
        }
    }

    /// A simulated download: one timer per step, no thread held in between.
    private func download(id: Int, print: @escaping @Sendable (String) -> Void) -> Job<Void> {
        Job { controller in
            @Sendable func step(_ index: Int) {
                guard index < Self.steps.count else {
                    DispatchQueue.main.async { print("  download \(id): completed") }
                    controller.finish()
                    return
                }
                let fraction = Self.steps[index]
                controller.report(progress: fraction)
                if fraction < 1 {
                    DispatchQueue.main.async { print("  download \(id): running \(Int(fraction * 100))%") }
                }
                controller.queue.asyncAfter(deadline: .now() + timing.nextStep()) { step(index + 1) }
            }
            step(0)
        }
    }
}
