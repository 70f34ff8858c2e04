import Dispatch
import JobKitTestSupport
import Testing

@testable import JobKit

/// `JobQueueStateMachine` over every order of its inputs — jobs added (ids reused once they end),
/// running and pending jobs ending (a pending one ends when it is cancelled), late completions of an
/// earlier job under a reused id, limit changes, pause and resume — with the queue's own view
/// (`pending`, `running`, `finished`, counts) checked against a model after every step.
@Suite struct JobQueueStateMachineExplorationTests {
    @Test func everyOrderOfInputsKeepsTheQueuesInvariants() {
        var report = StateSpaceExplorer.Report()
        for limit in 1...2 {
            report = report + StateSpaceExplorer.explore(depth: 7) { QueueSystem(limit: limit) }
        }
        StateSpaceExplorer.check("JobQueueStateMachine", report)
    }
}

/// One queue's state machine and a model of what it should hold.
struct QueueSystem: ExploredSystem {
    static let ids = 0..<3
    static let historyLimit = 2

    enum Input: Hashable, CustomStringConvertible {
        case add(Int)
        /// The job under `id` ends (a pending one: it was cancelled).
        case end(Int)
        /// The earlier job under a reused `id` reports its end late.
        case endLate(Int)
        case setLimit(Int)
        case pause, resume

        var description: String {
            switch self {
            case .add(let id): "add \(id)"
            case .end(let id): "\(id) ends"
            case .endLate(let id): "an earlier \(id) ends late"
            case .setLimit(let limit): "limit \(limit)"
            case .pause: "pause"
            case .resume: "resume"
            }
        }
    }

    private var machine: JobQueueStateMachine<Int>
    /// The model: pending ids in order, running ids in start order, ended ids most recent first.
    private var pending: [Int] = []
    private var running: [Int] = []
    private var ended: [Int] = []
    private var limit: Int
    private var isPaused = false
    private var sequences: [Int: UInt64] = [:]
    /// An earlier sequence of each reused id, for late completions.
    private var earlier: [Int: UInt64] = [:]
    private var drains = 0
    private var finishedCount = 0

    init(limit: Int) {
        self.limit = limit
        machine = JobQueueStateMachine(limit: limit, historyLimit: Self.historyLimit)
    }

    func enabledInputs() -> [Input] {
        var inputs: [Input] = []
        for id in Self.ids {
            if sequences[id] == nil { inputs.append(.add(id)) } else { inputs.append(.end(id)) }
            if earlier[id] != nil { inputs.append(.endLate(id)) }
        }
        for newLimit in 1...3 where newLimit != limit { inputs.append(.setLimit(newLimit)) }
        inputs.append(isPaused ? .resume : .pause)
        return inputs
    }

    mutating func apply(_ input: Input) -> [String] {
        var violations: [String] = []
        var started: [JobQueueStateMachine<Int>.Item] = []
        switch input {
        case .add(let id):
            let sequence = machine.takeSequence()
            let item = JobQueueStateMachine<Int>.Item(
                run: Job<Void>.empty.makeRun(on: .global(), parent: nil) { _ in }, start: {})
            do {
                started = try machine.add(item, id: id, sequence: sequence)
            } catch {
                violations.append("add \(id) refused: \(error)")
            }
            sequences[id] = sequence
            pending.append(id)
            items[id] = item.run.id
        case .end(let id):
            guard let sequence = sequences[id] else { return ["\(id) ended without a job"] }
            let completion = machine.completed(id, sequence: sequence)
            started = completion.start
            sequences[id] = nil
            // Its run may be freed now, and its address be a later run's.
            items[id] = nil
            earlier[id] = sequence
            pending.removeAll { $0 == id }
            running.removeAll { $0 == id }
            ended.insert(id, at: 0)
            ended = Array(ended.prefix(Self.historyLimit))
            finishedCount += 1
            let idle = sequences.isEmpty
            if completion.drained != idle {
                violations.append("drained \(completion.drained) with \(sequences.count) jobs")
            }
            if completion.drained { drains += 1 }
        case .endLate(let id):
            let completion = machine.completed(id, sequence: earlier[id]!)
            earlier[id] = nil
            if !completion.start.isEmpty || completion.drained {
                violations.append("a late completion of \(id) changed the queue")
            }
        case .setLimit(let newLimit):
            limit = newLimit
            started = machine.setLimit(newLimit)
        case .pause:
            isPaused = true
            started = machine.setPaused(true)
            if !started.isEmpty { violations.append("pausing started \(started.count) jobs") }
        case .resume:
            isPaused = false
            started = machine.setPaused(false)
        }
        // The items started are the oldest pending ones, in order, while slots are free.
        let startedIDs = started.map { item in items.first { $0.value == item.run.id }?.key ?? -1 }
        let expected = Array(pending.prefix(isPaused ? 0 : max(limit - running.count, 0)))
        if startedIDs != expected { violations.append("started \(startedIDs), expected \(expected)") }
        pending.removeFirst(min(startedIDs.count, pending.count))
        running += startedIDs
        // A limit lowered below the running jobs stops none of them, but nothing starts beyond it.
        if !startedIDs.isEmpty, running.count > limit { violations.append("\(running.count) running, limit \(limit)") }
        return violations + invariants()
    }

    /// The run of each id's current job.
    private var items: [Int: ObjectIdentifier] = [:]

    var fingerprint: [AnyHashable] {
        [pending, running, ended, limit, isPaused, sequences.keys.sorted(), earlier.keys.sorted(), drains > 0]
    }

    private func invariants() -> [String] {
        var violations: [String] = []
        if !isPaused, running.count < limit, !pending.isEmpty {
            violations.append("\(pending) pending while \(running.count) of \(limit) slots are taken")
        }
        if machine.pending != pending { violations.append("pending \(machine.pending), expected \(pending)") }
        if machine.running != running { violations.append("running \(machine.running), expected \(running)") }
        if machine.finished != ended { violations.append("finished \(machine.finished), expected \(ended)") }
        if machine.runningCount != running.count { violations.append("runningCount \(machine.runningCount)") }
        if machine.pendingCount != pending.count { violations.append("pendingCount \(machine.pendingCount)") }
        if machine.finishedCount != finishedCount { violations.append("finishedCount \(machine.finishedCount)") }
        if machine.isIdle != sequences.isEmpty {
            violations.append("isIdle \(machine.isIdle) with \(sequences.count) jobs")
        }
        if machine.limit != limit || machine.isPaused != isPaused { violations.append("limit or pause not kept") }
        return violations
    }
}
