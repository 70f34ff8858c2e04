import Dispatch
import JobKitTestSupport
import Testing

@testable import JobKit

@Suite struct RunStressTests {
    /// Finish, fail and cancel race from three threads; the handler must run exactly once every time,
    /// with one of the three outcomes, and the state must agree with it.
    @Test func exactlyOnceUnderRacingFinishFailAndCancel() async {
        // Every iteration completes twice on purpose: capture the reports instead of printing them.
        let misuses = Locked(0)
        let token = JobDiagnostics.addHandler { _ in misuses.withLock { $0 += 1 } }
        defer { JobDiagnostics.removeHandler(token) }
        let iterations = 20_000
        let deliveries = Locked([Int](repeating: 0, count: iterations))
        let agreeing = Locked(0)
        let racers = DispatchQueue(label: "racers", attributes: .concurrent)
        _ = await awaitCallback("every run to end") { (done: Resumer<Void>) in
            let remaining = Locked(iterations)
            for index in 0..<iterations {
                let handleBox = Locked<JobHandle?>(nil)
                let handle = Job<Int> { controller in
                    racers.async { controller.finish(index) }
                    racers.async { controller.fail(with: TestError(id: index)) }
                }.perform(on: racers, resultQueue: racers) { result in
                    deliveries.withLock { $0[index] += 1 }
                    let state = handleBox.current?.state
                    let matches: Bool
                    switch result {
                    case .success(let value): matches = value == index && (state == nil || state == .finished)
                    case .failure(let error as TestError):
                        matches = error.id == index && (state == nil || state == .failed)
                    case .failure(let error):
                        matches = (error as? JobError) == .cancelled && (state == nil || state == .cancelled)
                    }
                    if matches { agreeing.withLock { $0 += 1 } }
                    if remaining.withLock({
                        $0 -= 1; return $0
                    }) == 0 {
                        done.resume()
                    }
                }
                handleBox.withLock { $0 = handle }
                racers.async { handle.cancel() }
            }
        }
        #expect(deliveries.current.allSatisfy { $0 == 1 })
        #expect(agreeing.current == iterations)
    }

    /// Members completing while the group is cancelled: the group completes once, every member's
    /// onCancel runs at most once, and no member starts after the group ended.
    @Test func groupCompletesOnceWhileMembersRaceCancellation() async {
        let iterations = 2_000
        let deliveries = Locked(0)
        let lateStarts = Locked(0)
        let racers = DispatchQueue(label: "group-racers", attributes: .concurrent)
        _ = await awaitCallback("every run to end") { (done: Resumer<Void>) in
            let remaining = Locked(iterations)
            for _ in 0..<iterations {
                let ended = Locked(false)
                let members = (0..<4).map { _ in
                    Job<Void> { controller in
                        if ended.current { lateStarts.withLock { $0 += 1 } }
                        racers.async { controller.finish() }
                    }
                }
                let handle = Job.group(members, maxConcurrent: 2).perform(on: racers, resultQueue: racers) { _ in
                    ended.withLock { $0 = true }
                    deliveries.withLock { $0 += 1 }
                    if remaining.withLock({
                        $0 -= 1; return $0
                    }) == 0 {
                        done.resume()
                    }
                }
                racers.async { handle.cancel() }
            }
        }
        #expect(deliveries.current == iterations)
        #expect(lateStarts.current == 0)
    }
}
