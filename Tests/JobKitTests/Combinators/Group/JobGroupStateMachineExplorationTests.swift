import Foundation
import JobKitTestSupport
import Testing

@testable import JobKit

/// `JobGroupStateMachine` over every order of its inputs: the group's start, members registered in
/// any order (a range claimed on one thread may register after a later one), members finishing,
/// failing and reporting progress in any order, the group's cancellation, and its progress asked for
/// at any moment — with 1 to 4 members, with and without a limit, under every policy.
@Suite struct JobGroupStateMachineExplorationTests {
    @Test func everyOrderOfMembersKeepsTheGroupsInvariants() {
        var report = StateSpaceExplorer.Report()
        for count in 1...4 {
            for limit in [nil, 1, 2] where limit.map({ $0 < count }) ?? true {
                for kind in GroupSystem.Kind.allCases {
                    report =
                        report
                        + StateSpaceExplorer.explore(depth: 7) { GroupSystem(kind: kind, count: count, limit: limit) }
                }
            }
        }
        StateSpaceExplorer.check("JobGroupStateMachine", report)
    }

    /// The review's case, alone: progress asked for between claiming a member and registering it
    /// counted that member as done, and the group read 1.0 before its member had started.
    @Test func progressAskedForBeforeAClaimedMemberRegistersDoesNotCountItDone() {
        var system = GroupSystem(kind: .group, count: 1, limit: nil)
        for input: GroupSystem.Input in [.start, .askProgress, .register(first: 0)] {
            #expect(system.apply(input) == [], "after \(input)")
        }
        #expect(system.fraction == 0)
        #expect(system.apply(.finish(0)) == [])
        #expect(system.fraction == 1)
    }
}

/// One group's state machine and a model of `JobGroup` around it.
struct GroupSystem: ExploredSystem {
    enum Kind: CaseIterable {
        /// `group`: fail-fast, results counted.
        case group
        /// `collect`: fail-fast, results kept.
        case collect
        /// `settle`: every member to its end, results kept.
        case settle
    }

    enum Input: Hashable, CustomStringConvertible {
        case start
        /// The claimed range starting at `first` registers its runs.
        case register(first: Int)
        case finish(Int)
        case fail(Int)
        /// A member reports half its progress.
        case report(Int)
        /// A member cancelled by the group completes (with `JobError.cancelled`).
        case cancelledCompletes(Int)
        /// The group's own run is cancelled.
        case cancel
        /// Somebody asks for the group's progress (`attachChildren`).
        case askProgress

        var description: String {
            switch self {
            case .start: "start"
            case .register(let first): "register from \(first)"
            case .finish(let index): "finish \(index)"
            case .fail(let index): "fail \(index)"
            case .report(let index): "report 50% by \(index)"
            case .cancelledCompletes(let index): "cancelled \(index) completes"
            case .cancel: "cancel the group"
            case .askProgress: "ask for progress"
            }
        }
    }

    enum Member: Hashable {
        case unclaimed
        case claimed
        case running
        case finished
        case failed
        /// Registered after the group ended: never started.
        case dropped
        /// Taken by the group to be cancelled; its cancelled completion has not arrived.
        case cancelling
        case cancelledDone
    }

    let kind: Kind
    let count: Int
    let limit: Int
    private var machine: JobGroupStateMachine<Int>
    private var members: [Member]
    private var runs: [ObjectIdentifier: Int] = [:]
    /// Claimed ranges whose runs are not registered yet.
    private var unregistered: [Range<Int>] = []
    private var started = false
    private var outcome: String?
    private var outcomes = 0
    private var reported: [Bool]
    private var parent: ProgressReporter?
    private var children: [ProgressReporter] = []
    private var adopted: [Bool]
    private var lastFraction = 0.0

    init(kind: Kind, count: Int, limit: Int?) {
        self.kind = kind
        self.count = count
        self.limit = limit ?? max(count, 1)
        machine = JobGroupStateMachine(
            policy: kind == .settle ? .settle : .failFast, count: count, limit: self.limit,
            keepsResults: kind != .group)
        members = Array(repeating: .unclaimed, count: count)
        reported = Array(repeating: false, count: count)
        adopted = Array(repeating: false, count: count)
    }

    /// What the group's progress reads (0 before anybody asked).
    var fraction: Double { parent?.progress.fractionCompleted ?? 0 }

    func enabledInputs() -> [Input] {
        var inputs: [Input] = []
        if !started { inputs.append(.start) }
        inputs += unregistered.map { .register(first: $0.lowerBound) }
        for index in 0..<count {
            switch members[index] {
            case .running:
                inputs += [.finish(index), .fail(index)]
                if !reported[index] { inputs.append(.report(index)) }
            case .cancelling: inputs.append(.cancelledCompletes(index))
            default: break
            }
        }
        if outcome != "cancelled" { inputs.append(.cancel) }
        if parent == nil { inputs.append(.askProgress) }
        return inputs
    }

    mutating func apply(_ input: Input) -> [String] {
        var violations: [String] = []
        switch input {
        case .start:
            started = true
            switch machine.start() {
            case .launch(let range): claim(range)
            case .finish: violations.append("a group of \(count) finished at its start")
            }
        case .register(let first):
            let index = unregistered.firstIndex { $0.lowerBound == first }!
            violations += register(unregistered.remove(at: index))
        case .finish(let index):
            // A member's notice (its child progress completes) goes before its completion.
            if adopted[index] { children[index].complete() }
            members[index] = .finished
            violations += completed(index, with: .success(index))
        case .fail(let index):
            members[index] = .failed
            violations += completed(index, with: .failure(TestError(id: index)))
        case .report(let index):
            reported[index] = true
            if adopted[index] { children[index].apply(0.5) }
        case .cancelledCompletes(let index):
            members[index] = .cancelledDone
            if case .none = machine.memberCompleted(at: index, with: .failure(JobError.cancelled)) {
            } else {
                violations.append("member \(index), cancelled after the group ended, changed the group")
            }
        case .cancel:
            let cancelled = machine.cancel()
            if outcome == nil {
                end("cancelled")
                violations += checkCancelled(cancelled)
            } else if !cancelled.isEmpty {
                violations.append("a group that had ended cancelled \(cancelled.count) members")
            }
        case .askProgress:
            askProgress()
            if outcome == "finished", fraction != 1 {
                violations.append("asked after the end, progress reads \(fraction)")
            }
        }
        let broken = violations + invariants()
        return broken.map { "\(kind), \(count) members, limit \(limit): \($0)" }
    }

    var fingerprint: [AnyHashable] {
        [
            members, unregistered, started, outcome, outcomes, reported, parent != nil, adopted,
            Int((lastFraction * 1_000_000).rounded()), Int((fraction * 1_000_000).rounded()),
        ]
    }

    // MARK: Acting as `JobGroup` does

    private mutating func claim(_ range: Range<Int>) {
        guard !range.isEmpty else { return }
        for index in range { members[index] = .claimed }
        unregistered.append(range)
    }

    private mutating func register(_ range: Range<Int>) -> [String] {
        let made = range.map { index in
            Job<Int>.just(index).makeRun(on: .global(), parent: nil) { _ in }
        }
        for (index, run) in zip(range, made) { runs[run.id] = index }
        var violations: [String] = []
        if range.count == 1 {
            switch machine.register(made[0], at: range.lowerBound) {
            case .drop:
                members[range.lowerBound] = .dropped
            case .start:
                members[range.lowerBound] = .running
            case .adoptAndStart(let child):
                if child !== children[range.lowerBound] {
                    violations.append("member \(range.lowerBound) got another's child")
                }
                adopt(child, by: range.lowerBound)
                members[range.lowerBound] = .running
            }
        } else {
            guard let handed = machine.register(made, from: range.lowerBound) else {
                for index in range { members[index] = .dropped }
                return violations
            }
            for index in range { members[index] = .running }
            if !handed.isEmpty {
                for (index, child) in zip(range, handed) {
                    if child !== children[index] { violations.append("member \(index) got another's child") }
                    adopt(child, by: index)
                }
            }
        }
        if outcome != nil, range.contains(where: { members[$0] == .running }) {
            violations.append("members \(range) started after the group ended")
        }
        return violations
    }

    /// `Run.adopt`: the child is brought to the member's state.
    private mutating func adopt(_ child: ProgressReporter, by index: Int) {
        adopted[index] = true
        switch members[index] {
        case .finished: child.complete()
        case .running where reported[index]: child.apply(0.5)
        default: break
        }
    }

    private mutating func completed(_ index: Int, with result: Result<Int, any Error>) -> [String] {
        var violations: [String] = []
        switch machine.memberCompleted(at: index, with: result) {
        case .none:
            break
        case .launch(let range):
            claim(range)
        case .finish(let results):
            end("finished")
            violations += checkFinished(results)
            for child in machine.takeChildReporters() { child.complete() }
            // The group's run finishes: its notice completes its own progress.
            parent?.complete()
        case .fail(let error, let cancelling):
            end("failed")
            if kind == .settle { violations.append("a settle failed") }
            if (error as? TestError)?.id != index {
                violations.append("the group failed with \(error), not member \(index)'s error")
            }
            violations += checkCancelled(cancelling)
        }
        return violations
    }

    private mutating func end(_ how: String) {
        outcomes += 1
        if outcome == nil { outcome = how }
    }

    private mutating func askProgress() {
        let parent = ProgressReporter(units: ProgressReporter.leafUnits) {}
        self.parent = parent
        // `Run.progressReporter`: a run that has ended has no composite any more; its reporter is
        // brought to its final state.
        if let outcome {
            if outcome == "finished" { parent.complete() }
            return
        }
        // `JobGroup.attachChildren`, without the cancellation handlers.
        parent.changing { parent.progress.totalUnitCount = Int64(count) }
        children = (0..<count).map { _ in
            let child = ProgressReporter(units: ProgressReporter.leafUnits, tree: parent.tree) {}
            parent.changing { parent.progress.addChild(child.progress, withPendingUnitCount: 1) }
            return child
        }
        for (child, run) in machine.install(children) {
            if let run, let index = runs[run.id] {
                adopt(child, by: index)
            } else {
                child.complete()
            }
        }
    }

    // MARK: Invariants

    private func checkFinished(_ results: [Result<Int, any Error>]) -> [String] {
        var violations: [String] = []
        if members.contains(where: { $0 != .finished && $0 != .failed }) {
            violations.append("finished with members \(members.map { "\($0)" })")
        }
        if kind == .group {
            if !results.isEmpty { violations.append("a group kept \(results.count) results") }
        } else {
            let described = results.map { result in
                switch result {
                case .success(let value): "ok \(value)"
                case .failure(let error): "error \((error as? TestError)?.id ?? -1)"
                }
            }
            let expected = (0..<count).map { members[$0] == .finished ? "ok \($0)" : "error \($0)" }
            if described != expected { violations.append("results \(described), expected \(expected)") }
        }
        return violations
    }

    /// The members handed out to be cancelled are exactly the running ones, each once.
    private mutating func checkCancelled(_ runs: [Run<Int>]) -> [String] {
        var violations: [String] = []
        let indices = runs.compactMap { self.runs[$0.id] }.sorted()
        let running = (0..<count).filter { members[$0] == .running }
        if indices != running { violations.append("cancelled members \(indices), running \(running)") }
        for index in indices where members[index] == .running { members[index] = .cancelling }
        return violations
    }

    private mutating func invariants() -> [String] {
        var violations: [String] = []
        if outcomes > 1 { violations.append("the group ended \(outcomes) times") }
        if outcome == nil, started {
            let inFlight = members.filter { $0 == .claimed || $0 == .running }.count
            if inFlight > limit { violations.append("\(inFlight) members in flight, limit \(limit)") }
            if inFlight < limit, members.contains(.unclaimed) {
                violations.append("a member is pending while a slot is free (\(inFlight) of \(limit))")
            }
        }
        if parent != nil {
            let fraction = self.fraction
            if fraction < lastFraction - 1e-9 {
                violations.append("progress went back from \(lastFraction) to \(fraction)")
            }
            let allDone = members.allSatisfy { $0 == .finished }
            if fraction >= 1 - 1e-9, !(allDone || outcome == "finished") {
                violations.append("progress reads \(fraction) with members \(members.map { "\($0)" })")
            }
            if outcome == "finished", fraction != 1 {
                violations.append("a finished group's progress reads \(fraction)")
            }
            lastFraction = max(lastFraction, fraction)
        }
        return violations
    }
}
