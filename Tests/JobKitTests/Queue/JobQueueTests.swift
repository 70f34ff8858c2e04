import Dispatch
import Foundation
import JobKitTestSupport
import Testing

@testable import JobKit

@Suite struct JobQueueTests {
    /// Collects a queue's notices on a serial queue.
    final class Recorder: Sendable {
        let queue = DispatchQueue(label: "job-queue-results")
        let states = Locked<[Int: [JobState]]>([:])
        let drains = Locked(0)
        private let waiters = Locked<[(count: Int, continuation: Resumer<Void>)]>([])

        func record(_ id: Int, _ state: JobState) {
            states.withLock { $0[id, default: []].append(state) }
        }

        func drained() {
            let ready = waiters.withLock { waiters in
                let count = drains.withLock {
                    $0 += 1; return $0
                }
                defer { waiters.removeAll { $0.count <= count } }
                return waiters.filter { $0.count <= count }
            }
            for waiter in ready { waiter.continuation.resume() }
        }

        /// Waits until `count` drain notices have arrived in all.
        func waitForDrains(_ count: Int) async {
            _ = await awaitCallback("\(count) drain notices") { (continuation: Resumer<Void>) in
                // Checked under the waiters' lock, so a drain cannot slip between the check and the wait.
                let ready = waiters.withLock { waiters -> Bool in
                    if drains.current >= count { return true }
                    waiters.append((count, continuation))
                    return false
                }
                if ready { continuation.resume() }
            }
        }

        func makeQueue(maxConcurrent: Int) -> JobQueue<Int> {
            JobQueue(
                maxConcurrent: maxConcurrent, resultQueue: queue,
                onStateChange: { self.record($0, $1) }, onAllFinished: { self.drained() })
        }
    }

    private func timed(_ meter: InFlightMeter, milliseconds: Int = 2) -> Job<Void> {
        Job { controller in
            meter.enter()
            controller.queue.asyncAfter(deadline: .now() + .milliseconds(milliseconds)) {
                meter.leave()
                controller.finish()
            }
        }
    }

    @Test func neverExceedsMaxConcurrentWhileJobsAreAddedDuringTheRun() async throws {
        let recorder = Recorder()
        let meter = InFlightMeter()
        let jobQueue = recorder.makeQueue(maxConcurrent: 3)
        // The first 20 jobs each add one more job while they run, so the queue never drains early.
        // Paused while they are added: a slow adding thread (the sanitizer, a loaded machine) would
        // otherwise let the first jobs finish, and the queue drain, before the next is added.
        jobQueue.pause()
        for id in 0..<20 {
            let addsAnother = Job<Void> { controller in
                try? jobQueue.add(timed(meter), id: 20 + id)
                timed(meter).callBody(controller)
            }
            try jobQueue.add(addsAnother, id: id)
        }
        jobQueue.resume()
        await recorder.waitForDrains(1)
        recorder.queue.sync {}
        #expect(meter.peak == 3)
        #expect(recorder.drains.current == 1)
        #expect(jobQueue.finished.count == 40)
        #expect(jobQueue.pending.isEmpty && jobQueue.running.isEmpty)
        let states = recorder.states.current
        #expect(states.count == 40)
        for (_, sequence) in states {
            #expect(sequence.first == .pending)
            #expect(sequence.last == .finished)
        }
    }

    @Test func setMaxConcurrentRaisesAndLowersTheWidthAtOnce() async throws {
        let recorder = Recorder()
        let jobQueue = recorder.makeQueue(maxConcurrent: 1)
        let release = Locked<[Job<Void>.Controller]>([])
        let holding = Job<Void> { controller in release.withLock { $0.append(controller) } }
        for id in 0..<6 { try jobQueue.add(holding, id: id) }
        #expect(jobQueue.running == [0])
        #expect(jobQueue.pending == [1, 2, 3, 4, 5])
        jobQueue.setMaxConcurrent(4)
        #expect(jobQueue.running == [0, 1, 2, 3], "raising starts pending jobs at once")
        jobQueue.setMaxConcurrent(1)
        while release.current.count < 4 { await Task.yield() }
        // Finish the running four: with width 1, only one more may start after they end.
        for controller in release.withLock({ controllers in
            defer { controllers = [] }; return controllers
        }) {
            controller.finish()
        }
        #expect(jobQueue.running == [4])
        #expect(jobQueue.pending == [5])
        for _ in 0..<2 {
            while release.current.isEmpty { await Task.yield() }
            release.withLock { $0.removeFirst() }.finish()
        }
        await recorder.waitForDrains(1)
        #expect(Array(jobQueue.finished.prefix(2)) == [5, 4], "most recent first")
        #expect(Set(jobQueue.finished) == Set(0..<6))
    }

    @Test func exactlyOneAllFinishedPerDrain() async throws {
        let recorder = Recorder()
        let jobQueue = recorder.makeQueue(maxConcurrent: 2)
        for round in 0..<3 {
            // A job held open while the others are added, so that the queue drains exactly once per round.
            let held = Locked<Job<Void>.Controller?>(nil)
            try jobQueue.add(Job { controller in held.withLock { $0 = controller } }, id: round * 10 + 9)
            for id in 0..<5 { try jobQueue.add(.empty, id: round * 10 + id) }
            while held.current == nil { await Task.yield() }
            held.current!.finish()
            await recorder.waitForDrains(round + 1)
            recorder.queue.sync {}
            #expect(recorder.drains.current == round + 1)
        }
    }

    @Test func cancelAndCancelAllEndJobsAsCancelled() async throws {
        let recorder = Recorder()
        let jobQueue = recorder.makeQueue(maxConcurrent: 1)
        let never = Job<Void> { _ in }
        for id in 0..<4 { try jobQueue.add(never, id: id) }
        jobQueue.cancel(id: 2)
        #expect(jobQueue.pending == [1, 3])
        jobQueue.cancelAll()
        await recorder.waitForDrains(1)
        recorder.queue.sync {}
        #expect(recorder.states.current.values.allSatisfy { $0.last == .cancelled })
        #expect(recorder.drains.current == 1)
    }

    @Test func duplicateIDsAreRefusedWithoutANotice() async throws {
        let recorder = Recorder()
        let jobQueue = recorder.makeQueue(maxConcurrent: 1)
        try jobQueue.add(Job<Void> { _ in }, id: 1)
        #expect(throws: JobQueue<Int>.Error.duplicateID(1)) { try jobQueue.add(.empty, id: 1) }
        jobQueue.cancelAll()
        await recorder.waitForDrains(1)
        recorder.queue.sync {}
        let states = recorder.states.current[1] ?? []
        #expect(states.filter { $0 == .pending }.count == 1, "the refused job was never observed")
        #expect(states.last == .cancelled)
        #expect(recorder.states.current.count == 1)
    }

    @Test func jobsOfAnyValueTypeDeliverTheirOwnResults() async throws {
        let recorder = Recorder()
        let jobQueue = recorder.makeQueue(maxConcurrent: 2)
        let results = Locked<[Int: String]>([:])
        try jobQueue.add(Job<Int>.just(42), id: 1, resultQueue: recorder.queue) { result in
            results.withLock { $0[1] = "\((try? result.get()).map(String.init) ?? "error")" }
        }
        try jobQueue.add(Job<String>.failure(TestError(id: 2)), id: 2, resultQueue: recorder.queue) { result in
            results.withLock { $0[2] = "\(result.failureError.map { "\($0)" } ?? "value")" }
        }
        try jobQueue.add(Job<[String]>.just(["a"]), id: 3)
        await jobQueue.waitUntilIdle()
        recorder.queue.sync {}
        #expect(results.current == [1: "42", 2: "TestError(id: 2)"])
        #expect(recorder.states.current[2]?.last == .failed)
        #expect(jobQueue.finishedCount == 3)
    }

    @Test func pausedQueuesStartNothingUntilResumed() async throws {
        let recorder = Recorder()
        let jobQueue = recorder.makeQueue(maxConcurrent: 3)
        jobQueue.pause()
        #expect(jobQueue.isPaused)
        for id in 0..<5 { try jobQueue.add(.empty, id: id) }
        #expect(jobQueue.pending == [0, 1, 2, 3, 4])
        #expect(jobQueue.running.isEmpty)
        jobQueue.resume()
        await jobQueue.waitUntilIdle()
        #expect(jobQueue.pending.isEmpty && jobQueue.running.isEmpty)
        #expect(jobQueue.finishedCount == 5)
    }

    @Test func waitUntilIdleReturnsAtOnceWhenIdleAndWhenItsTaskIsCancelled() async throws {
        let jobQueue = JobQueue<Int>(maxConcurrent: 1, resultQueue: resultQueue)
        await jobQueue.waitUntilIdle()
        try jobQueue.add(Job<Void> { _ in }, id: 1)  // never finishes
        let waiter = Task { await jobQueue.waitUntilIdle() }
        waiter.cancel()
        await waiter.value
        #expect(jobQueue.running == [1])
        jobQueue.handle(for: 1)?.cancel()
        await jobQueue.waitUntilIdle()
        #expect(jobQueue.handle(for: 1) == nil)
    }

    @Test func handlesOfQueuedJobsCancelAndReportErrors() async throws {
        let jobQueue = JobQueue<String>(maxConcurrent: 1, resultQueue: resultQueue)
        try jobQueue.add(Job<Void> { _ in }, id: "first")
        try jobQueue.add(Job<Void>.empty, id: "second")
        let handle = try #require(jobQueue.handle(for: "second"))
        #expect(handle.state == .pending)
        handle.cancel()
        #expect(handle.error as? JobError == .cancelled)
        #expect(jobQueue.pending.isEmpty)
        jobQueue.cancelAll()
        await jobQueue.waitUntilIdle()
        #expect(jobQueue.finished == ["first", "second"])
    }

    @Test func aHundredThousandJobsPassWithABoundedHistory() async throws {
        let jobQueue = JobQueue<Int>(maxConcurrent: 8, resultQueue: resultQueue, finishedHistoryLimit: 10)
        for id in 0..<100_000 { try jobQueue.add(.empty, id: id) }
        await jobQueue.waitUntilIdle()
        #expect(jobQueue.finishedCount == 100_000)
        #expect(jobQueue.finished.count == 10)
    }

    @Test func widthsBelowOneCountAsOne() async throws {
        let meter = InFlightMeter()
        let jobQueue = JobQueue<Int>(maxConcurrent: 0, resultQueue: resultQueue)
        #expect(jobQueue.maxConcurrent == 1)
        jobQueue.setMaxConcurrent(Int.min)
        #expect(jobQueue.maxConcurrent == 1)
        for id in 0..<10 { try jobQueue.add(timed(meter), id: id) }
        await jobQueue.waitUntilIdle()
        #expect(meter.peak == 1)
        jobQueue.setMaxConcurrent(.max)
        for id in 0..<10 { try jobQueue.add(timed(meter), id: id) }
        await jobQueue.waitUntilIdle()
    }
}
