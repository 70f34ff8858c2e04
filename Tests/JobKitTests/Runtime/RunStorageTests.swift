import Dispatch
import JobKitTestSupport
import Testing

@testable import JobKit

/// The run's storage: its erased completion, its start through GCD, and its 4-byte lock.
@Suite struct RunStorageTests {
    /// Counts its releases, and calls `onRelease` with the count.
    private final class Tracked: Sendable {
        let released: Locked<Int>
        let onRelease: @Sendable (Int) -> Void
        init(released: Locked<Int>, onRelease: @escaping @Sendable (Int) -> Void) {
            self.released = released
            self.onRelease = onRelease
        }
        deinit {
            onRelease(
                released.withLock {
                    $0 += 1; return $0
                })
        }
    }

    #if !JOBKIT_SAFE_RUNTIME && !canImport(Darwin)
        /// On Linux runs start through `dispatch_async_f`; this fails loudly if the wrapper's layout
        /// check ever stops passing (runs would then quietly fall back to blocks).
        @Test func theCQueueIsReadFromSwiftDispatchQueues() {
            #expect(DispatchQueueHandle.isVerified)
            let queue = DispatchQueue(label: "jobkit.tests.handle")
            #expect(DispatchQueueHandle.handle(of: queue) != nil)
        }
    #endif

    @Test func aBodyRunsOnTheQueueItWasPerformedOn() async throws {
        let key = DispatchSpecificKey<Int>()
        let queues = (0..<4).map { index in
            let queue = DispatchQueue(label: "jobkit.tests.queue\(index)")
            queue.setSpecific(key: key, value: index)
            return queue
        }
        for (index, queue) in queues.enumerated() {
            let outcome = await Job<Int?> { $0.finish(DispatchQueue.getSpecific(key: key)) }.outcome(on: queue)
            #expect(try outcome.get() == index)
        }
    }

    /// Every kind of completion (a closure, a group slot, a perform handler) keeps what its closure
    /// holds until the run ends, and releases it exactly once, whether the run finished, failed or was
    /// cancelled before it started.
    @Test(.timeLimit(.minutes(10))) func completionsReleaseWhatTheyHoldExactlyOnce() async {
        let released = Locked(0)
        let ran = Locked(0)
        let inactive = DispatchQueue(label: "jobkit.tests.inactive", attributes: .initiallyInactive)
        _ = await awaitCallback("every run to end") { (done: Resumer<Void>) in
            let finished: @Sendable () -> Void = { ran.withLock { $0 += 1 } }
            let onRelease: @Sendable (Int) -> Void = { count in if count == 3 { done.resume() } }
            do {
                let tracked = Tracked(released: released, onRelease: onRelease)
                Job<Int>.just(1).perform(resultQueue: .global()) { _ in
                    withExtendedLifetime(tracked) {}
                    finished()
                }
            }
            do {
                let tracked = Tracked(released: released, onRelease: onRelease)
                Job.group([Job<Void>.failure(TestError(id: 1)), .empty]).perform(resultQueue: .global()) { _ in
                    withExtendedLifetime(tracked) {}
                    finished()
                }
            }
            do {
                let tracked = Tracked(released: released, onRelease: onRelease)
                let handle = Job<Int>.just(3).perform(on: inactive, resultQueue: .global()) { result in
                    withExtendedLifetime(tracked) {}
                    finished()
                }
                handle.cancel()
            }
            inactive.activate()
        }
        // The handlers held the last references: each ran once, and was released once after it ran.
        #expect(ran.current == 3)
        #expect(released.current == 3)
    }

    /// A value far larger than a controller, to show that a body's argument never depends on `Value`.
    private struct Large: Equatable, Sendable {
        var numbers = Array(0..<4)
        var text = "large"
        var a = 1, b = 2, c = 3, d = 4, e = 5, f = 6, g = 7, h = 8
    }

    private final class Reference: Sendable {}

    /// A job made where its value type is generic.
    private func just<T: Sendable>(_ value: T) -> Job<T> {
        Job<T> { controller in controller.finish(value) }
    }

    /// A run starts its job's body erased (`RunBody`, called with no generic metadata): every value
    /// type's body gets its own controller — its run, its queue — intact.
    @Test func bodiesOfEveryValueTypeStartWithTheirOwnController() async throws {
        let key = DispatchSpecificKey<Int>()
        let queue = DispatchQueue(label: "jobkit.tests.erased")
        queue.setSpecific(key: key, value: 42)
        let reference = Reference()
        #expect(
            try await Job<Int> { $0.finish(DispatchQueue.getSpecific(key: key) ?? 0) }.outcome(on: queue).get() == 42)
        #expect(try await Job<String> { $0.finish("text") }.outcome().get() == "text")
        #expect(try await Job<Large> { $0.finish(Large()) }.outcome().get() == Large())
        #expect(try await Job<Reference> { $0.finish(reference) }.outcome().get() === reference)
        #expect(try await Job<Int?> { $0.finish(nil) }.outcome().get() == nil)
        #expect(try await just(Large()).outcome().get() == Large())
        #expect(try await just([1, 2, 3]).outcome().get() == [1, 2, 3])
        let (handle, outcome) = Job<Void> { controller in
            controller.report(progress: 0.5)
            #expect(controller.queue.label == "jobkit.tests.erased")
            controller.finish()
        }.started(on: queue)
        _ = try await outcome.result.get()
        #expect(handle.state == .finished)
        #expect(handle.progress.fractionCompleted == 1)
    }

    /// Something a job's body captured, watched through a weak reference.
    private final class Captured: Sendable {}

    /// A run lets go of its job's body once the body has started, and a run cancelled before it
    /// started does so when it reaches its start: a handle kept by something the body captured (a
    /// scheduler that cancels the run, say) makes no cycle that outlives the run.
    @Test func anEndedRunKeepsNothingItsJobsBodyCaptured() async throws {
        let serial = DispatchQueue(label: "jobkit.tests.serial")
        let inactive = DispatchQueue(label: "jobkit.tests.inactive", attributes: .initiallyInactive)
        weak var capturedByRan: Captured?
        weak var capturedBySkipped: Captured?
        var handles: [JobHandle] = []
        do {
            let captured = Captured()
            capturedByRan = captured
            let (handle, outcome) = Job<Void> { controller in
                withExtendedLifetime(captured) {}
                controller.finish()
            }.started(on: serial)
            handles.append(handle)
            _ = try await outcome.result.get()
        }
        do {
            let captured = Captured()
            capturedBySkipped = captured
            let (handle, outcome) = Job<Void> { controller in
                withExtendedLifetime(captured) {}
                controller.finish()
            }.started(on: inactive)
            handles.append(handle)
            handle.cancel()
            #expect(isCancelled(await outcome.result))
        }
        inactive.activate()
        serial.sync {}  // the body has returned
        inactive.sync {}  // the cancelled run reached its start
        #expect(capturedByRan == nil, "a finished run keeps its job's body")
        #expect(capturedBySkipped == nil, "a run cancelled before it started keeps its job's body")
        #expect(handles.map(\.state) == [.finished, .cancelled])
    }

    /// Eight threads take one lock a million times in all: no increment may be lost.
    @Test func theLockKeepsTheStateExactUnderContention() async {
        let threads = 8
        let perThread = 125_000
        let counter = LockedBox.make(0)
        DispatchQueue.concurrentPerform(iterations: threads) { _ in
            for _ in 0..<perThread { counter.withLock { $0 += 1 } }
        }
        #expect(counter.withLock { $0 } == threads * perThread)
    }
}
