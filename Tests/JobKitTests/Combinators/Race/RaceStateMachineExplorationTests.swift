import Dispatch
import JobKitTestSupport
import Testing

@testable import JobKit

/// `RaceStateMachine` over every order of its members' completions, its timer and its run's
/// cancellation, for `race`, `firstSuccess` and `timeout`, with 1 to 4 members: the race's own run
/// (a `RunStateMachine`) is driven beside it, as `RaceExecution` and `Run` drive them.
@Suite struct RaceStateMachineExplorationTests {
    @Test func everyOrderOfMembersAndTimerDecidesOnce() {
        var report = StateSpaceExplorer.Report()
        for rule in [RaceStateMachine<Int>.Rule.firstCompletion, .firstSuccess] {
            for count in 1...4 {
                for hasTimer in [false, true] {
                    report =
                        report
                        + StateSpaceExplorer.explore(depth: 10) {
                            RaceSystem(rule: rule, count: count, hasTimer: hasTimer)
                        }
                }
            }
        }
        StateSpaceExplorer.check("RaceStateMachine", report)
    }
}

/// One race's state machine, its run's, and a model of `RaceExecution` around them.
struct RaceSystem: ExploredSystem {
    enum Input: Hashable, CustomStringConvertible {
        case succeed(Int)
        case fail(Int)
        /// A member cancelled by the race completes with `JobError.cancelled`.
        case cancelledCompletes(Int)
        case timerFires
        /// The race's own run is cancelled (its handler cancels the members and the timer).
        case cancel

        var description: String {
            switch self {
            case .succeed(let index): "member \(index) succeeds"
            case .fail(let index): "member \(index) fails"
            case .cancelledCompletes(let index): "cancelled member \(index) completes"
            case .timerFires: "the timer fires"
            case .cancel: "cancel the race"
            }
        }
    }

    enum Member: Hashable {
        case running, succeeded, failed, cancelling, cancelled
    }

    let rule: RaceStateMachine<Int>.Rule
    let hasTimer: Bool
    private var machine: RaceStateMachine<Int>
    private var run = RunStateMachine(
        body: RunBody { (_: Job<Int>.Controller) in }, queue: DispatchQueue(label: "explored"),
        completion: RunCompletion<Int>.call { _ in }.erased, trace: nil)
    private var members: [Member]
    /// What completed first, in order (`ok 2`, `error 1`, `timer`).
    private var arrivals: [String] = []
    private var timerPending: Bool
    private var decision: String?
    private var decisions = 0
    private var completions = 0

    init(rule: RaceStateMachine<Int>.Rule, count: Int, hasTimer: Bool) {
        self.rule = rule
        self.hasTimer = hasTimer
        machine = RaceStateMachine(rule: rule, count: count)
        members = Array(repeating: .running, count: count)
        timerPending = hasTimer
        _ = run.start()
    }

    func enabledInputs() -> [Input] {
        var inputs: [Input] = []
        for (index, member) in members.enumerated() {
            switch member {
            case .running: inputs += [.succeed(index), .fail(index)]
            case .cancelling: inputs += [.cancelledCompletes(index), .succeed(index)]
            default: break
            }
        }
        if timerPending { inputs.append(.timerFires) }
        if !run.state.isFinal { inputs.append(.cancel) }
        return inputs
    }

    mutating func apply(_ input: Input) -> [String] {
        var violations: [String] = []
        let action: RaceStateMachine<Int>.Action
        switch input {
        case .succeed(let index):
            members[index] = .succeeded
            arrivals.append("ok \(index)")
            action = machine.memberCompleted(at: index, with: .success(index))
        case .fail(let index):
            members[index] = .failed
            arrivals.append("error \(index)")
            action = machine.memberCompleted(at: index, with: .failure(TestError(id: index)))
        case .cancelledCompletes(let index):
            members[index] = .cancelled
            action = machine.memberCompleted(at: index, with: .failure(JobError.cancelled))
            if case .resolve = action, decision == nil, !run.state.isFinal {
                violations.append("a member cancelled by the race decided it")
            }
        case .timerFires:
            timerPending = false
            arrivals.append("timer")
            action = machine.timerFired()
        case .cancel:
            // The run's cancel handler (`ChildRuns`) cancels every member and the timer.
            if case .cancel = run.cancel() { completions += 1 }
            cancelAll()
            action = .none
        }
        if case .resolve(let result) = action {
            decisions += 1
            decision =
                switch result {
                case .success(let value): "ok \(value)"
                case .failure(let error as TestError): "error \(error.id)"
                case .failure(let error as AllJobsFailed):
                    "all failed \(error.errors.map { ($0 as? TestError)?.id ?? -1 })"
                case .failure(let error as JobError) where error == .timedOut: "timer"
                case .failure(let error as JobError) where error == .cancelled: "cancelled"
                case .failure(let error): "\(error)"
                }
            // Once the run was cancelled, its members' cancellations may decide: nobody hears it.
            if !run.state.isFinal { violations += checkDecision() }
            // `RaceExecution.act`: the losers and the timer are cancelled, then the run resolves.
            cancelAll()
            if case .deliver = run.complete(failure: result.failure, fromBody: false) { completions += 1 }
        }
        return violations + invariants()
    }

    var fingerprint: [AnyHashable] {
        [members, arrivals, timerPending, decision, decisions, completions, run.state.description]
    }

    private mutating func cancelAll() {
        for index in members.indices where members[index] == .running { members[index] = .cancelling }
        timerPending = false
    }

    /// The decision is the first arrival's (`race`, `timeout`), the first success's or every
    /// member's error in input order (`firstSuccess`).
    private func checkDecision() -> [String] {
        let expected: String
        switch rule {
        case .firstCompletion:
            expected = arrivals.first ?? "-"
        case .firstSuccess:
            let firstWin = arrivals.first { $0.hasPrefix("ok") || $0 == "timer" }
            if let firstWin {
                expected = firstWin
            } else {
                expected = "all failed \(Array(members.indices))"
            }
        }
        return decision == expected ? [] : ["decided \(decision ?? "-") after \(arrivals), expected \(expected)"]
    }

    private func invariants() -> [String] {
        var violations: [String] = []
        if decisions > 1 { violations.append("decided \(decisions) times") }
        if completions > 1 { violations.append("the race's run completed \(completions) times") }
        if run.state.isFinal != (completions == 1) {
            violations.append("the run is \(run.state) after \(completions) completions")
        }
        let allArrived = !members.contains(.running) && !timerPending
        if rule == .firstSuccess, allArrived, decision == nil, !run.state.isFinal, members.allSatisfy({ $0 == .failed })
        {
            violations.append("every member failed and nothing was decided")
        }
        return violations
    }
}

extension Result {
    fileprivate var failure: Failure? {
        if case .failure(let error) = self { return error }
        return nil
    }
}
