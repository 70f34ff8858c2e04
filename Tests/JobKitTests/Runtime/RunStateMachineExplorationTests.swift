import Dispatch
import Foundation
import JobKitTestSupport
import Testing

@testable import JobKit

/// `RunStateMachine` over every order of its inputs: start, the body's finish and fail (twice: a
/// misuse), a combinator passing on cancellation, cancel, progress, cancel handlers added and
/// removed, observers added and ended, delegates set and released, observers' deliveries, and the
/// run's progress asked for — acting on each action as `Run` and `RunStorage` do, with no queue.
@Suite struct RunStateMachineExplorationTests {
    @Test func everyOrderOfInputsKeepsTheRunsInvariants() {
        let report = StateSpaceExplorer.explore(depth: 6) { RunSystem() }
        StateSpaceExplorer.check("RunStateMachine", report)
    }
}

/// One run's state machine and a model of `Run` around it.
struct RunSystem: ExploredSystem {
    enum Input: Hashable, CustomStringConvertible {
        case start
        case finish
        case fail
        /// A combinator ends the run with `JobError.cancelled` passed on from a member.
        case passOnCancellation
        case cancel
        case report(Double)
        case addCancelHandler
        case removeCancelHandler
        case observe
        case stopObserving
        case setDelegate
        case releaseDelegate
        /// The observer's queue runs its drain.
        case drain(Int)
        case askProgress

        var description: String {
            switch self {
            case .start: "start"
            case .finish: "finish"
            case .fail: "fail"
            case .passOnCancellation: "complete with cancelled"
            case .cancel: "cancel"
            case .report(let fraction): "report \(fraction)"
            case .addCancelHandler: "add a cancel handler"
            case .removeCancelHandler: "remove the last cancel handler"
            case .observe: "observe"
            case .stopObserving: "stop the first observation"
            case .setDelegate: "set a delegate"
            case .releaseDelegate: "release the delegate"
            case .drain(let index): "drain observer \(index)"
            case .askProgress: "ask for progress"
            }
        }
    }

    /// What one observer (a closure's or a delegate's) heard.
    final class Heard: @unchecked Sendable {
        // Safety: written by `StateObserver.drain`, which the explorer calls on its own thread only.
        var states: [JobState] = []
    }

    struct Observation {
        let observer: StateObserver
        let heard: Heard
        var isStopped = false
        /// How many states it had heard when it was stopped.
        var heardWhenStopped = 0
        let isDelegate: Bool
    }

    enum Handler: Hashable {
        case registered(token: Int)
        case removed
        case ran(step: Int)
        case dropped
    }

    private var machine = RunStateMachine(
        body: RunBody { (_: Job<Void>.Controller) in }, queue: DispatchQueue(label: "explored"),
        completion: RunCompletion<Void>.call { _ in }.erased, trace: nil)
    private var step = 0
    private var started = false
    private var bodyCompletions = 0
    private var completions = 0
    private var misuses = 0
    private var cancels = 0
    private var firstFinal: JobState?
    private var handlers: [Handler] = []
    private var observations: [Observation] = []
    private var delegate: Int?
    private var reporter: ProgressReporter?
    private var lastFraction = 0.0
    private var lastStateFraction = 0.0

    func enabledInputs() -> [Input] {
        var inputs: [Input] = []
        if !started { inputs.append(.start) }
        // The body completes only once it runs; a second completion is a misuse. A run is completed
        // either by its body or by its combinator (`resolve`), never by both.
        if started, isBodyRunning, bodyCompletions < 2, !passedOn { inputs += [.finish, .fail] }
        if bodyCompletions == 0, !passedOn { inputs.append(.passOnCancellation) }
        if cancels < 2 { inputs.append(.cancel) }
        if started, isBodyRunning { inputs += [.report(0.5), .report(1)] }
        if handlers.count < 2 { inputs.append(.addCancelHandler) }
        if case .registered = handlers.last { inputs.append(.removeCancelHandler) }
        if observations.filter({ !$0.isDelegate }).count < 1 { inputs.append(.observe) }
        if observations.contains(where: { !$0.isDelegate && !$0.isStopped }) { inputs.append(.stopObserving) }
        if observations.filter(\.isDelegate).count < 2 { inputs.append(.setDelegate) }
        if delegate != nil { inputs.append(.releaseDelegate) }
        for index in observations.indices where !observations[index].isStopped { inputs.append(.drain(index)) }
        if reporter == nil { inputs.append(.askProgress) }
        return inputs
    }

    /// Whether the body was handed over (a run cancelled before its start never runs it).
    private var isBodyRunning: Bool { bodyStarted }
    private var bodyStarted = false
    private var passedOn = false

    mutating func apply(_ input: Input) -> [String] {
        step += 1
        var violations: [String] = []
        switch input {
        case .start:
            started = true
            switch machine.start() {
            case .run(_, let notice):
                bodyStarted = true
                send(notice)
            case .skip:
                if firstFinal != .cancelled { violations.append("a run skipped its body while \(machine.state)") }
            }
        case .finish, .fail, .passOnCancellation:
            let fromBody = input != .passOnCancellation
            if fromBody { bodyCompletions += 1 } else { passedOn = true }
            let failure: (any Error)? =
                switch input {
                case .finish: nil
                case .fail: TestError(id: 1)
                default: JobError.cancelled
                }
            switch machine.complete(failure: failure, fromBody: fromBody) {
            case .deliver(_, let notice):
                send(notice)
                complete()
            case .reportMisuse:
                misuses += 1
                if bodyCompletions < 2 { violations.append("a first completion by the body reported as a misuse") }
            case .none:
                break
            }
        case .cancel:
            cancels += 1
            switch machine.cancel() {
            case .cancel(let toRun, _, let notice):
                let registered = handlers.indices.filter {
                    if case .registered = handlers[$0] { true } else { false }
                }
                if toRun.count != registered.count {
                    violations.append("\(toRun.count) cancel handlers to run, \(registered.count) registered")
                }
                for index in registered { ran(index, &violations) }
                send(notice)
                complete()
            case .none:
                break
            }
        case .report(let fraction):
            send(machine.report(progress: fraction))
        case .addCancelHandler:
            let index = handlers.count
            handlers.append(.dropped)
            switch machine.addCancelHandler({}) {
            case .added(let token): handlers[index] = .registered(token: token)
            case .runNow:
                if machine.state != .cancelled {
                    violations.append("a cancel handler ran at once while \(machine.state)")
                }
                handlers[index] = .ran(step: step)
            case .dropped:
                if machine.state != .finished, machine.state != .failed {
                    violations.append("a cancel handler dropped while \(machine.state)")
                }
            }
        case .removeCancelHandler:
            if case .registered(let token) = handlers.last {
                machine.removeCancelHandler(token: token)
                handlers[handlers.count - 1] = .removed
            }
        case .observe:
            let observation = makeObservation(isDelegate: false)
            _ = machine.add(observation.observer)
            observations.append(observation)
        case .stopObserving:
            if let index = observations.firstIndex(where: { !$0.isDelegate && !$0.isStopped }) { stop(index) }
        case .setDelegate:
            let observation = makeObservation(isDelegate: true)
            let (previous, _) = machine.replaceDelegateObserver(with: observation.observer)
            if let delegate {
                if previous !== observations[delegate].observer, !machine.state.isFinal {
                    violations.append("the previous delegate was not handed back to be stopped")
                }
            }
            if let previous, let index = observations.firstIndex(where: { $0.observer === previous }) {
                // `Run.replaceDelegateObserver` stops the previous delegate's observer.
                markStopped(index)
                previous.stop()
            }
            observations.append(observation)
            delegate = observations.count - 1
        case .releaseDelegate:
            if let delegate { stop(delegate) }
            delegate = nil
        case .drain(let index):
            observations[index].observer.drain()
            if machine.state.isFinal, observations[index].heard.states.last != firstFinal {
                violations.append("observer \(index) drained after the end without its final state")
            }
        case .askProgress:
            let made = machine.reporter { ProgressReporter(units: ProgressReporter.leafUnits) {} }
            if case .created(let reporter, let state, _) = made {
                // `Run.progressReporter`.
                if state.isFinal { reporter.detach() }
                reporter.bring(to: state)
                self.reporter = reporter
            } else {
                violations.append("a progress made twice")
            }
        }
        return violations + invariants()
    }

    var fingerprint: [AnyHashable] {
        [
            machine.state.description, started, bodyStarted, bodyCompletions, passedOn, completions, misuses, cancels,
            handlers.map { if case .ran = $0 { Handler.ran(step: 0) } else { $0 } },
            observations.map { [$0.heard.states.map(\.description), $0.isStopped, $0.isDelegate] as [AnyHashable] },
            delegate, reporter?.progress.fractionCompleted,
        ]
    }

    // MARK: Acting as `Run` does

    private func makeObservation(isDelegate: Bool) -> Observation {
        let heard = Heard()
        let observer = StateObserver(queue: DispatchQueue(label: "observer")) { heard.states.append($0) }
        return Observation(observer: observer, heard: heard, isDelegate: isDelegate)
    }

    /// `Run.stopObserving`.
    private mutating func stop(_ index: Int) {
        machine.remove(observations[index].observer)
        markStopped(index)
        observations[index].observer.stop()
    }

    private mutating func markStopped(_ index: Int) {
        guard !observations[index].isStopped else { return }
        observations[index].isStopped = true
        observations[index].heardWhenStopped = observations[index].heard.states.count
    }

    /// `Notice.send`, but for the observers' drains, which the explorer runs as inputs.
    private func send(_ notice: RunStateMachine.Notice?) {
        guard let notice, let reporter = notice.reporter else { return }
        reporter.bring(to: notice.state)
        if notice.state.isFinal { reporter.detach() }
    }

    private mutating func complete() {
        completions += 1
    }

    private mutating func ran(_ index: Int, _ violations: inout [String]) {
        if case .ran = handlers[index] { violations.append("cancel handler \(index) ran twice") }
        if case .removed = handlers[index] { violations.append("removed cancel handler \(index) ran") }
        handlers[index] = .ran(step: step)
    }

    // MARK: Invariants

    private mutating func invariants() -> [String] {
        var violations: [String] = []
        let state = machine.state
        if completions > 1 { violations.append("completed \(completions) times") }
        if state.isFinal != (completions == 1) { violations.append("\(state) after \(completions) completions") }
        if let firstFinal, state != firstFinal { violations.append("the final \(firstFinal) became \(state)") }
        if state.isFinal, firstFinal == nil { firstFinal = state }
        if misuses > 1 { violations.append("a misuse reported \(misuses) times") }
        // Handlers run with the cancellation (before its completion is delivered), or at once when
        // added to a cancelled run: never in a run that finished or failed.
        for case .ran in handlers where state != .cancelled {
            violations.append("a cancel handler ran in a run that \(state)")
        }
        if case .running(let fraction) = state {
            if fraction < lastStateFraction { violations.append("progress went back to \(fraction)") }
            lastStateFraction = fraction
        }
        if let reporter {
            let fraction = reporter.progress.fractionCompleted
            if fraction < lastFraction {
                violations.append("the Progress went back from \(lastFraction) to \(fraction)")
            }
            lastFraction = fraction
            let reportedWhole = state == .running(fraction: 1)
            if fraction >= 1, state != .finished, !reportedWhole, !(state.isFinal && lastStateFraction == 1) {
                violations.append("the Progress reads \(fraction) while \(state)")
            }
            if state == .finished, fraction != 1 { violations.append("a finished run's Progress reads \(fraction)") }
        }
        for (index, observation) in observations.enumerated() {
            let states = observation.heard.states
            if observation.isStopped, states.count > observation.heardWhenStopped {
                violations.append("observer \(index) heard \(states[observation.heardWhenStopped...]) after it ended")
            }
            if let final = states.firstIndex(where: \.isFinal), final != states.count - 1 {
                violations.append("observer \(index) heard \(states) (something after the final state)")
            }
            var previous = -1.0
            for heard in states {
                let rank: Double =
                    switch heard {
                    case .pending: -0.5
                    case .running(let fraction): fraction
                    default: 2
                    }
                if rank < previous { violations.append("observer \(index) heard \(states) out of order") }
                previous = rank
            }
        }
        return violations
    }
}
