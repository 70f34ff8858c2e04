import Dispatch
import JobKit

/// Seed 000: upload every photo and video in parallel, then the post — never the post after a failed
/// upload.
struct PublishScenario: Sendable {
    var photos: Int
    var videos: Int
    var failUpload: Bool
    var timing: SimulatedTiming
    var tracers: [any JobTracer] = []

    struct UploadError: Error, CustomStringConvertible {
        let name: String
        var description: String { "upload of \(name) failed" }
    }

    /// Runs the scenario; `print` is called on the main queue. Returns whether the post was published.
    func run(print: @escaping @Sendable (String) -> Void) async -> Bool {
        let media =
            (1..<photos + 1).map { "photo \($0)" }
            + (1..<videos + 1).map { "video \($0)" }
        let failing = failUpload ? media.last : nil
        var publish = Job.sequence([
            .group(media.map { upload($0, fails: $0 == failing, print: print) }).named("upload media"),
            upload("post", fails: false, print: print),
        ]).named("publish")
        for tracer in tracers { publish = publish.traced(by: tracer) }
        print("publish: uploading \(media.count) media, then the post\(failing.map { " (\($0) will fail)" } ?? "")")
        return await withCheckedContinuation { continuation in
            publish.perform { result in
                switch result {
                case .success:
                    print("publish: the post was published")
                    continuation.resume(returning: true)
                case .failure(let error):
                    print("publish: \(error) — the post was NOT published")
                    continuation.resume(returning: false)
                }
            }
        }
    }

    private func upload(_ name: String, fails: Bool, print: @escaping @Sendable (String) -> Void) -> Job<Void> {
        let delay = timing.nextStep()
        return Job<Void>.wrapping { done in
            DispatchQueue.global().asyncAfter(deadline: .now() + delay) {
                DispatchQueue.main.async { print("  \(fails ? "✗" : "✓") \(name)") }
                done(fails ? UploadError(name: name) : nil)
            }
        }.named("upload \(name)")
    }
}
