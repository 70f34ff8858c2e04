import Dispatch
import JobKitTestSupport
import Testing

@testable import JobKit

@Suite struct JobComposeTests {
    @Test func thenPassesValuesAlong() async throws {
        let uploads = (1...3).map { index in Job<Int>.after(.milliseconds(3 - index), value: index * 10) }
        let created = Locked<[Int]>([])
        let publish = Job.collect(uploads).then { ids in
            Job<String> { controller in
                created.withLock { $0 = ids }
                controller.finish("post with \(ids.count) media")
            }
        }
        #expect(try await publish.value == "post with 3 media")
        #expect(created.current == [10, 20, 30])
    }

    @Test func mapTransformsAndThrowingFails() async throws {
        #expect(try await Job.just(2).map { $0 * 21 }.map(String.init).value == "42")
        await #expect(throws: TestError(id: 1)) {
            try await Job.just(2).map { _ -> Int in throw TestError(id: 1) }.value
        }
    }

    @Test func aFailureSkipsTheRestOfTheChain() async {
        let ran = Locked(false)
        let job = Job<Int>.failure(TestError(id: 4)).then { _ in
            Job<Int> {
                ran.withLock { $0 = true }; $0.finish(1)
            }
        }
        await #expect(throws: TestError(id: 4)) { try await job.value }
        #expect(!ran.current)
    }

    @Test func recoverReplacesAFailureAndMapErrorRewritesIt() async throws {
        #expect(try await Job<Int>.failure(TestError(id: 1)).recover { _ in .just(7) }.value == 7)
        #expect(try await Job.just(3).recover { _ in .just(7) }.value == 3)
        await #expect(throws: TestError(id: 99)) {
            try await Job<Int>.failure(TestError(id: 1)).mapError { _ in TestError(id: 99) }.value
        }
    }

    @Test func cancellingAChainCancelsTheStepInFlight() async {
        let cancelled = Locked(false)
        let started = Locked(false)
        let chain = Job.just(1).then { _ in
            Job<Int> { controller in
                controller.onCancel { cancelled.withLock { $0 = true } }
                started.withLock { $0 = true }
            }
        }
        let waiter = Task { try await chain.value }
        while !started.current { await Task.yield() }
        waiter.cancel()
        #expect((await waiter.result.failureError as? JobError) == .cancelled)
        #expect(cancelled.current)
    }

    @Test func millionStepThenChainRunsAndIsReleasedInConstantStack() async throws {
        let steps = scaledForTheRun(1_000_000)
        var job = Job.just(0)
        for _ in 0..<steps { job = job.then { .just($0 + 1) } }
        #expect(try await job.value == steps)
        var mapped = Job.just(0)
        for _ in 0..<steps { mapped = mapped.map { $0 + 1 } }
        #expect(try await mapped.value == steps)
    }

    @Test func aNamedChainStaysOneUnitWhenExtended() async throws {
        let named = Job.just(1).map { $0 + 1 }.named("two")
        #expect(try await named.map { $0 * 10 }.value == 20)
        #expect(named.name == "two")
    }
}
