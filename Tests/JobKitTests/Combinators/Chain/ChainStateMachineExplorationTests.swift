import Dispatch
import JobKitTestSupport
import Testing

@testable import JobKit

/// `ChainStateMachine` over every outcome of its links, in every chain of a head and up to three
/// maps and steps: each job link succeeds, fails, is cancelled or reports progress; each map and
/// step returns or throws; the chain's run may be cancelled at any moment. The chain's run (a
/// `RunStateMachine`) is driven beside it, as `ChainExecution` and `Run` drive them.
@Suite struct ChainStateMachineExplorationTests {
    @Test func everyOutcomeOfEveryLinkResolvesTheChainOnce() {
        var report = StateSpaceExplorer.Report()
        for shape in ChainSystem.shapes(upTo: 3) {
            report = report + StateSpaceExplorer.explore(depth: 12) { ChainSystem(shape: shape) }
        }
        StateSpaceExplorer.check("ChainStateMachine", report)
    }
}

/// One chain's state machine, its run's, and a model of `ChainExecution` around them.
struct ChainSystem: ExploredSystem {
    enum Link: Hashable, CustomStringConvertible {
        case map, step

        var description: String { self == .map ? "map" : "step" }
    }

    enum Input: Hashable, CustomStringConvertible {
        /// The running job link (the head, or a step's job) succeeds, fails or is cancelled.
        case jobSucceeds, jobFails, jobCancelled
        /// The running job link reports progress.
        case report(Double)
        /// The pending map or step returns, or throws.
        case returns, `throws`
        /// The chain's own run is cancelled (its children are cancelled; the running one completes
        /// later with `JobError.cancelled`).
        case cancel

        var description: String {
            switch self {
            case .jobSucceeds: "the job succeeds"
            case .jobFails: "the job fails"
            case .jobCancelled: "the job is cancelled"
            case .report(let fraction): "the job reports \(fraction)"
            case .returns: "the closure returns"
            case .throws: "the closure throws"
            case .cancel: "cancel the chain"
            }
        }
    }

    /// What the chain waits for.
    enum Waiting: Hashable {
        case job(offset: Double, scale: Double)
        case closure(isStep: Bool, isLast: Bool, offset: Double, scale: Double)
        /// The last step's job ran as a tail call: it completes the chain's run itself.
        case tail
        case nothing
    }

    static func shapes(upTo count: Int) -> [[Link]] {
        var shapes: [[Link]] = [[]]
        var last: [[Link]] = [[]]
        for _ in 0..<count {
            last = last.flatMap { [$0 + [.map], $0 + [.step]] }
            shapes += last
        }
        return shapes
    }

    let shape: [Link]
    private var machine: ChainStateMachine
    private var run = RunStateMachine(
        body: RunBody { (_: Job<Int>.Controller) in }, queue: DispatchQueue(label: "explored"),
        completion: RunCompletion<Int>.call { _ in }.erased, trace: nil)
    private var waiting: Waiting = .nothing
    /// Which link runs now (0 is the head).
    private var link = 0
    private var resolutions = 0
    private var completions = 0
    private var progress = 0.0
    private var childFraction = 0.0
    private var jobsDone = 0

    init(shape: [Link]) {
        self.shape = shape
        let kinds: [ChainLink.Kind] =
            [.head(Job<Int>.just(0))]
            + shape.map { link in
                switch link {
                case .map: .map { $0 }
                case .step: .step { _ in Job<Int>.just(0) }
                }
            }
        machine = ChainStateMachine(links: kinds)
        _ = run.start()
        _ = act(on: machine.start())
    }

    private var jobCount: Int { 1 + shape.count { $0 == .step } }

    func enabledInputs() -> [Input] {
        var inputs: [Input] = []
        switch waiting {
        case .job, .tail:
            inputs += [.jobSucceeds, .jobFails, .jobCancelled]
            if childFraction < 0.5 { inputs.append(.report(0.5)) }
            if childFraction < 1 { inputs.append(.report(1)) }
        case .closure:
            inputs += [.returns, .throws]
        case .nothing:
            break
        }
        if !run.state.isFinal { inputs.append(.cancel) }
        return inputs
    }

    mutating func apply(_ input: Input) -> [String] {
        var violations: [String] = []
        switch (input, waiting) {
        case (.report(let fraction), .job(let offset, let scale)):
            childFraction = fraction
            progress = max(progress, offset + scale * fraction)
            _ = run.report(progress: offset + scale * fraction)
        case (.report(let fraction), .tail):
            childFraction = fraction
        case (.jobFails, .tail), (.jobCancelled, .tail):
            // The tail job holds the chain's run: it completes it directly.
            waiting = .nothing
            resolve(input == .jobFails ? TestError(id: 1) : JobError.cancelled)
        case (.jobSucceeds, .job):
            jobsDone += 1
            violations += act(on: machine.linkCompleted(with: .success(0)))
        case (.jobFails, .job):
            violations += act(on: machine.linkCompleted(with: .failure(TestError(id: 1))))
        case (.jobCancelled, .job):
            violations += act(on: machine.linkCompleted(with: .failure(JobError.cancelled)))
        case (.jobSucceeds, .tail):
            jobsDone += 1
            waiting = .nothing
            resolve(nil)
        case (.returns, .closure(true, let isLast, let offset, let scale)):
            // `ChainExecution.perform`: the step's job starts, or runs as a tail call when it is last.
            childFraction = 0
            waiting = isLast ? .tail : .job(offset: offset, scale: scale)
        case (.returns, .closure):
            violations += act(on: machine.linkCompleted(with: .success(0)))
        case (.throws, .closure):
            violations += act(on: machine.linkCompleted(with: .failure(TestError(id: 2))))
        case (.cancel, _):
            if case .cancel = run.cancel() { completions += 1 }
        default:
            violations.append("\(input) while waiting for \(waiting)")
        }
        return violations + invariants()
    }

    var fingerprint: [AnyHashable] {
        [waiting, link, resolutions, completions, progress, childFraction, jobsDone, run.state.description]
    }

    /// Acts on the machine's action as `ChainExecution.perform` does.
    private mutating func act(on action: ChainStateMachine.Action) -> [String] {
        var violations: [String] = []
        switch action {
        case .start(_, let share):
            childFraction = 0
            let expected = Double(jobsDone) / Double(jobCount)
            if abs(share.offset - expected) > 1e-9 || abs(share.scale - 1 / Double(jobCount)) > 1e-9 {
                violations.append("a job's share is \(share.offset) + \(share.scale), expected \(expected)")
            }
            if share.offset < progress - 1e-9 {
                violations.append("the next job's share starts at \(share.offset), below \(progress)")
            }
            waiting = .job(offset: share.offset, scale: share.scale)
        case .map:
            link += 1
            if shape[link - 1] != .map { violations.append("a map applied for link \(link)") }
            waiting = .closure(isStep: false, isLast: link == shape.count, offset: 0, scale: 0)
        case .step(_, _, let share, let isLast):
            link += 1
            if shape[link - 1] != .step { violations.append("a step made for link \(link)") }
            if isLast != (link == shape.count) {
                violations.append("link \(link) of \(shape.count) says isLast \(isLast)")
            }
            let expected = Double(jobsDone) / Double(jobCount)
            if abs(share.offset - expected) > 1e-9 {
                violations.append("a step's share starts at \(share.offset), expected \(expected)")
            }
            waiting = .closure(isStep: true, isLast: isLast, offset: share.offset, scale: share.scale)
        case .resolve(let result):
            waiting = .nothing
            resolutions += 1
            if case .success = result, link != shape.count {
                violations.append("resolved with a value at link \(link)")
            }
            switch result {
            case .success: resolve(nil)
            case .failure(let error): resolve(error)
            }
        }
        return violations
    }

    /// `Job.Controller.resolve`: completes the chain's run.
    private mutating func resolve(_ failure: (any Error)?) {
        if case .deliver = run.complete(failure: failure, fromBody: false) { completions += 1 }
    }

    private func invariants() -> [String] {
        var violations: [String] = []
        if resolutions > 1 { violations.append("resolved \(resolutions) times") }
        if completions > 1 { violations.append("the chain's run completed \(completions) times") }
        if run.state.isFinal != (completions == 1) {
            violations.append("the run is \(run.state) after \(completions) completions")
        }
        if case .running(let fraction) = run.state, fraction >= 1, jobsDone < jobCount, childFraction < 1 {
            violations.append("progress reads 1.0 with \(jobsDone) of \(jobCount) jobs done")
        }
        if run.state == .finished, jobsDone != jobCount {
            violations.append("finished with \(jobsDone) of \(jobCount) jobs")
        }
        return violations
    }
}
