import Dispatch
import Foundation
import JobKitTestSupport
import Testing

@testable import JobKit

/// The combinators' state machines, alone: no queue, no lock, no run.
@Suite struct StateMachineTests {
    @Test func raceTakesTheFirstCompletionAndIgnoresTheRest() {
        var race = RaceStateMachine<Int>(rule: .firstCompletion, count: 3)
        guard case .resolve(.failure(let error)) = race.memberCompleted(at: 1, with: .failure(TestError(id: 1))) else {
            Issue.record("the first completion decides, error or not")
            return
        }
        #expect(error as? TestError == TestError(id: 1))
        guard case .none = race.memberCompleted(at: 0, with: .success(0)) else { Issue.record("decided"); return }
        guard case .none = race.timerFired() else { Issue.record("decided"); return }
    }

    @Test func firstSuccessWaitsForASuccessOrEveryFailureInInputOrder() {
        var race = RaceStateMachine<Int>(rule: .firstSuccess, count: 3)
        guard case .none = race.memberCompleted(at: 2, with: .failure(TestError(id: 2))) else {
            Issue.record("unexpected action"); return
        }
        guard case .none = race.memberCompleted(at: 0, with: .failure(TestError(id: 0))) else {
            Issue.record("unexpected action"); return
        }
        guard case .resolve(.failure(let error)) = race.memberCompleted(at: 1, with: .failure(TestError(id: 1))) else {
            Issue.record("all failed"); return
        }
        #expect((error as? AllJobsFailed)?.errors.compactMap { ($0 as? TestError)?.id } == [0, 1, 2])

        var winner = RaceStateMachine<Int>(rule: .firstSuccess, count: 2)
        _ = winner.memberCompleted(at: 0, with: .failure(TestError(id: 0)))
        guard case .resolve(.success(7)) = winner.memberCompleted(at: 1, with: .success(7)) else {
            Issue.record("a success decides"); return
        }
    }

    @Test func aTimerThatFiresFirstTimesOut() {
        var timeout = RaceStateMachine<Int>(rule: .firstCompletion, count: 1)
        guard case .resolve(.failure(let error)) = timeout.timerFired() else {
            Issue.record("unexpected action"); return
        }
        #expect(error as? JobError == .timedOut)
        guard case .none = timeout.memberCompleted(at: 0, with: .success(1)) else { Issue.record("late"); return }
    }

    @Test func retryAsksThePolicyUntilTheLastAttempt() {
        var retry = RetryStateMachine(attempts: 3)
        guard case .askPolicy = retry.attemptCompleted(failed: TestError(id: 1)) else {
            Issue.record("unexpected action"); return
        }
        guard case .retry(after: .seconds(2)) = retry.policyAnswered(retry: true, wait: .seconds(2)) else {
            Issue.record("unexpected action"); return
        }
        guard case .askPolicy = retry.attemptCompleted(failed: TestError(id: 2)) else {
            Issue.record("unexpected action"); return
        }
        guard case .retryNow = retry.policyAnswered(retry: true, wait: .zero) else {
            Issue.record("unexpected action"); return
        }
        #expect(retry.attempt == 3)
        guard case .resolve = retry.attemptCompleted(failed: TestError(id: 3)) else { Issue.record("last"); return }
        var refused = RetryStateMachine(attempts: 5)
        _ = refused.attemptCompleted(failed: TestError(id: 1))
        guard case .resolve = refused.policyAnswered(retry: false, wait: .zero) else {
            Issue.record("unexpected action"); return
        }
        var success = RetryStateMachine(attempts: 5)
        guard case .resolve = success.attemptCompleted(failed: nil) else { Issue.record("success"); return }
        #expect(RetryStateMachine(attempts: -3).attempts == 1)
    }

    @Test func aChainAppliesMapsInlineAndSharesProgressBetweenItsJobs() {
        let links: [ChainLink.Kind] = [
            .head(Job<Int>.just(1)), .map { ($0 as! Int) + 1 }, .step { _ in Job<Int>.just(3) },
            .map { ($0 as! Int) * 2 },
        ]
        var chain = ChainStateMachine(links: links)
        guard case .start(_, let share) = chain.start() else { Issue.record("head"); return }
        #expect(share.map(1) == 0.5)
        guard case .map(let transform, let value) = chain.linkCompleted(with: .success(1)) else {
            Issue.record("map"); return
        }
        let mapped = try? transform(value)
        guard case .step(_, _, let stepShare, let isLast) = chain.linkCompleted(with: .success(mapped!)) else {
            Issue.record("step"); return
        }
        #expect(stepShare.map(0) == 0.5 && stepShare.map(1) == 1)
        #expect(!isLast, "a map follows the step")
        guard case .map = chain.linkCompleted(with: .success(3)) else { Issue.record("last map"); return }
        guard case .resolve(.success(let last)) = chain.linkCompleted(with: .success(6)) else {
            Issue.record("resolve"); return
        }
        #expect(last as? Int == 6)
    }

    @Test func aChainStopsAtTheFirstFailure() {
        var chain = ChainStateMachine(links: [.head(Job<Int>.just(1)), .step { _ in Job<Int>.just(2) }])
        _ = chain.start()
        guard case .resolve(.failure) = chain.linkCompleted(with: .failure(TestError(id: 1))) else {
            Issue.record("unexpected action"); return
        }
    }

    @Test func recoverPassesOnSuccessAndCancellation() {
        guard case .passOn = RecoverDecision(Result<Int, any Error>.success(1)) else {
            Issue.record("unexpected action"); return
        }
        guard case .passOn = RecoverDecision(Result<Int, any Error>.failure(JobError.cancelled)) else {
            Issue.record("unexpected action"); return
        }
        guard case .recover = RecoverDecision(Result<Int, any Error>.failure(JobError.timedOut)) else {
            Issue.record("unexpected action"); return
        }
    }

    @Test func graphStopAllSkipsAClaimedNodeThatRegistersLate() throws {
        var graph = JobGraph<String>()
        for name in ["a", "b", "c"] { try graph.add(name, .empty) }
        var machine = JobGraphStateMachine(graph: graph, limit: 3, policy: .stopAll)
        let start = machine.start()
        #expect(start.launch.sorted() == ["a", "b", "c"])
        let runA = Job<Void>.empty.makeRun(on: .global(), parent: nil) { _ in }
        let step1 = machine.register(runA, for: "a")
        #expect(step1.start)
        // "a" fails while "b" and "c" are claimed but their runs do not exist yet.
        let stop = machine.completed("a", .failed(TestError(id: 1)))
        #expect(stop.cancel.isEmpty && stop.launch.isEmpty && stop.finish == nil)
        let runB = Job<Void>.empty.makeRun(on: .global(), parent: nil) { _ in }
        let step2 = machine.register(runB, for: "b")
        #expect(!step2.start)
        let last = machine.register(Job<Void>.empty.makeRun(on: .global(), parent: nil) { _ in }, for: "c")
        #expect(!last.start)
        let outcomes = try #require(last.action.finish)
        #expect(outcomes.mapValues { "\($0)" } == ["a": "failed: TestError(id: 1)", "b": "skipped", "c": "skipped"])
    }

    @Test func queueStartsInOrderSkipsCancelledPendingAndKeepsABoundedHistory() throws {
        var queue = JobQueueStateMachine<Int>(limit: 2, historyLimit: 3)
        func item() -> JobQueueStateMachine<Int>.Item {
            JobQueueStateMachine<Int>.Item(run: Job<Void>.empty.makeRun(on: .global(), parent: nil) { _ in }) {}
        }
        var sequences: [Int: UInt64] = [:]
        var started = 0
        for id in 0..<6 {
            let sequence = queue.takeSequence()
            sequences[id] = sequence
            started += try queue.add(item(), id: id, sequence: sequence).count
        }
        #expect(started == 2)
        #expect(queue.running == [0, 1] && queue.pending == [2, 3, 4, 5])
        #expect(throws: JobQueueStateMachine<Int>.AddError.self) { try queue.add(item(), id: 3, sequence: 99) }
        // 2 is cancelled while pending: it ends without ever starting, and 3 is next.
        let step3 = queue.completed(2, sequence: sequences[2]!)
        #expect(step3.start.isEmpty)
        let step4 = queue.completed(0, sequence: sequences[0]!)
        #expect(step4.start.count == 1)
        #expect(queue.running == [1, 3])
        // A stale completion (an earlier sequence) changes nothing.
        let step5 = queue.completed(3, sequence: 0)
        #expect(step5.start.isEmpty && queue.running == [1, 3])
        _ = queue.setPaused(true)
        let step6 = queue.completed(1, sequence: sequences[1]!)
        #expect(step6.start.isEmpty, "paused")
        let step7 = queue.setPaused(false)
        #expect(step7.count == 1)
        for id in [3, 4, 5] { _ = queue.completed(id, sequence: sequences[id]!) }
        #expect(queue.isIdle)
        #expect(queue.finished == [5, 4, 3], "the most recent three")
        #expect(queue.finishedCount == 6)
    }

    @Test func observerBufferCoalescesProgressButNeverStates() {
        var buffer = StateObserverBuffer()
        let step8 = buffer.append(.pending)
        #expect(step8)
        var drains = 0
        for step in 1...1_000 where buffer.append(.running(fraction: Double(step) / 1_000)) { drains += 1 }
        #expect(drains == 0, "one drain is already scheduled")
        #expect(buffer.count == 2)
        let step9 = buffer.next()
        #expect(step9 == .pending)
        let step10 = buffer.append(.finished)
        #expect(!step10)
        let step11 = buffer.next()
        #expect(step11 == .running(fraction: 1))
        let step12 = buffer.next()
        #expect(step12 == .finished)
        let step13 = buffer.next()
        #expect(step13 == nil)
        let step14 = buffer.append(.finished)
        #expect(step14, "a new drain after the last one ended")
        buffer.stop()
        let step15 = buffer.next()
        #expect(step15 == nil)
        let step16 = buffer.append(.finished)
        #expect(!step16, "a stopped observer takes nothing")
    }

    @Test func progressRequestsLetOneThreadApplyAndCollectReentrantReports() {
        var requests = ProgressRequests()
        let step17 = requests.request(fraction: 0.2)
        #expect(step17, "the first reporter applies")
        let step18 = requests.request(fraction: 0.5)
        #expect(!step18, "a re-entrant report is left to the applier")
        let step19 = requests.request(fraction: 0.4)
        #expect(!step19, "never backwards")
        let step20 = requests.next()
        #expect(step20?.fraction == 0.5)
        let step21 = requests.requestCompletion()
        #expect(!step21)
        let step22 = requests.next()
        #expect(step22?.isComplete == true)
        let step23 = requests.next()
        #expect(step23 == nil)
        let step24 = requests.request(fraction: 0.9)
        #expect(step24 == false, "complete stays complete")
    }

    @Test func queueSlotsOfCancelledPendingJobsStayBounded() throws {
        var queue = JobQueueStateMachine<Int>(limit: 1, historyLimit: 0)
        func item() -> JobQueueStateMachine<Int>.Item {
            JobQueueStateMachine<Int>.Item(run: Job<Void>.empty.makeRun(on: .global(), parent: nil) { _ in }) {}
        }
        _ = try queue.add(item(), id: -1, sequence: queue.takeSequence())  // runs forever
        for round in 0..<100_000 {
            let sequence = queue.takeSequence()
            _ = try queue.add(item(), id: round % 3, sequence: sequence)
            _ = queue.completed(round % 3, sequence: sequence)  // cancelled while pending
        }
        #expect(queue.pendingSlotCount <= 65, "\(queue.pendingSlotCount) slots")
        #expect(queue.pending.isEmpty && queue.running == [-1])
    }

    @Test func waiterTokensAreForgottenWhateverTheOrder() {
        var queue = JobQueueStateMachine<Int>(limit: 1, historyLimit: 0)
        let early = queue.makeWaiterToken()
        #expect(queue.cancelWaiter(early) == nil)  // cancelled before it waited
        let late = queue.makeWaiterToken()
        _ = queue.cancelWaiter(late)
        _ = queue.cancelWaiter(late)  // twice, and after it was resolved: nothing kept
        #expect(queue.isIdle)
    }
}
