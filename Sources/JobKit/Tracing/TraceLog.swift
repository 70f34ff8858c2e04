/// The events a tracer collected, turned into one span per run with a lane for drawing.
struct TraceLog: Sendable {
    enum Outcome: String, Sendable {
        case finished, failed, cancelled, unfinished
    }

    struct Span: Sendable {
        let runID: UInt64
        let parentID: UInt64?
        let name: String
        /// When the body started (or, if it never did, when it was enqueued).
        var start: UInt64
        var end: UInt64?
        var outcome: Outcome
        /// Whether other runs name this one as their parent (a group, collect, settle or sequence).
        var isParent = false
        /// The row it is drawn in: among leaves, a concurrency slot; among parents, a nesting row.
        var lane = 0
    }

    /// How many runs a log keeps unless told otherwise.
    static let defaultMaximumRuns = 100_000

    /// The most runs kept; the events of later runs are dropped (and counted).
    let maximumRuns: Int
    private var byID: [UInt64: Span] = [:]
    private var order: [UInt64] = []
    /// Runs that were not recorded because the log was full.
    private(set) var droppedRuns = 0

    init(maximumRuns: Int = TraceLog.defaultMaximumRuns) {
        self.maximumRuns = max(maximumRuns, 0)
    }

    /// Folds `event` into its run's span. Progress events carry nothing a span shows and are not kept,
    /// so the log holds one span per run, at most `maximumRuns` of them.
    mutating func append(_ event: JobTraceEvent) {
        if byID[event.runID] == nil {
            guard order.count < maximumRuns else {
                if event.kind == .enqueued { droppedRuns += 1 }
                return
            }
            order.append(event.runID)
            byID[event.runID] = Span(
                runID: event.runID, parentID: event.parentID, name: event.name ?? "job \(event.runID)",
                start: event.time, end: nil, outcome: .unfinished)
        }
        switch event.kind {
        case .enqueued, .progress: break
        case .started: byID[event.runID]?.start = event.time
        case .finished: byID[event.runID]?.close(at: event.time, .finished)
        case .failed: byID[event.runID]?.close(at: event.time, .failed)
        case .cancelled: byID[event.runID]?.close(at: event.time, .cancelled)
        }
    }

    /// One span per run, in order of start, each with a lane: no two spans in one lane overlap, so the
    /// number of leaf lanes is the highest number of jobs that ran at once.
    func spans() -> [Span] {
        var byID = self.byID
        for span in byID.values { if let parent = span.parentID { byID[parent]?.isParent = true } }
        var spans = order.map { byID[$0]! }.sorted { $0.start < $1.start }
        let lastEnd = spans.compactMap(\.end).max() ?? spans.last?.start ?? 0
        var laneEnds: [Bool: [UInt64]] = [true: [], false: []]
        for index in spans.indices {
            let end = spans[index].end ?? lastEnd
            var ends = laneEnds[spans[index].isParent]!
            if let free = ends.firstIndex(where: { $0 <= spans[index].start }) {
                spans[index].lane = free
                ends[free] = end
            } else {
                spans[index].lane = ends.count
                ends.append(end)
            }
            laneEnds[spans[index].isParent] = ends
        }
        return spans
    }
}

extension TraceLog.Span {
    fileprivate mutating func close(at time: UInt64, _ outcome: TraceLog.Outcome) {
        end = time
        self.outcome = outcome
    }
}

/// A `TraceLog` behind a lock, shared by the tracers that collect one.
final class TraceRecorder: Sendable {
    private let log: LockedBox<TraceLog>

    init(maximumRuns: Int) {
        log = LockedBox.make(TraceLog(maximumRuns: maximumRuns))
    }

    func record(_ event: JobTraceEvent) {
        log.withLock { $0.append(event) }
    }

    var spans: [TraceLog.Span] { log.withLock { $0 }.spans() }

    var droppedRuns: Int { log.withLock { $0.droppedRuns } }
}
