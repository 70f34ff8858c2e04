import Foundation

/// A tracer that writes Chrome trace-event JSON: open the file in Perfetto (ui.perfetto.dev) or
/// `chrome://tracing`.
///
/// **Threading.** Thread-safe: runs record into it from any thread at once, and `write(to:)` (or reading the
/// JSON) may be called from any thread, at any time, with what was recorded so far.
///
/// Each run is a begin/end pair; jobs are laid out one thread row per concurrency slot ("slot 1",
/// "slot 2", …) and groups and sequences on rows of their own, so the rows show how many ran at once.
///
/// ```swift
/// let trace = ChromeTraceWriter()
/// downloads.traced(by: trace).perform { _ in try? trace.write(to: URL(filePath: "downloads.json")) }
/// ```
public final class ChromeTraceWriter: JobTracer {
    private let recorder: TraceRecorder

    /// - Parameter maximumRuns: the most runs recorded, 100,000 unless told otherwise: memory stays
    ///   bounded however long the tracer is used. Runs beyond it are counted in `droppedRuns`, not drawn.
    public init(maximumRuns: Int = 100_000) {
        recorder = TraceRecorder(maximumRuns: maximumRuns)
    }

    /// How many runs were not recorded because `maximumRuns` were already.
    public var droppedRuns: Int { recorder.droppedRuns }

    /// Records `event`; called by JobKit from any thread.
    public func record(_ event: JobTraceEvent) {
        recorder.record(event)
    }

    /// The trace so far, as JSON (`{"traceEvents": [...]}`).
    public func jsonData() throws -> Data {
        let spans = recorder.spans
        let origin = spans.map(\.start).min() ?? 0
        let lastEnd = spans.compactMap(\.end).max() ?? origin
        func microseconds(_ time: UInt64) -> Double { Double(time - origin) / 1000 }
        func thread(_ span: TraceLog.Span) -> Int { span.isParent ? 1 + span.lane : 1001 + span.lane }

        var events: [[String: Any]] = []
        for row in Set(spans.map(thread)).sorted() {
            let name = row > 1000 ? "slot \(row - 1000)" : "group row \(row)"
            events.append([
                "name": "thread_name", "ph": "M", "pid": 1, "tid": row, "args": ["name": name],
            ])
        }
        for span in spans {
            var args: [String: Any] = ["run": span.runID, "outcome": span.outcome.rawValue]
            if let parent = span.parentID { args["parent"] = parent }
            let common: [String: Any] = ["name": span.name, "cat": "job", "pid": 1, "tid": thread(span)]
            events.append(common.merging(["ph": "B", "ts": microseconds(span.start), "args": args]) { $1 })
            events.append(common.merging(["ph": "E", "ts": microseconds(span.end ?? lastEnd)]) { $1 })
        }
        return try JSONSerialization.data(
            withJSONObject: ["traceEvents": events, "displayTimeUnit": "ms"], options: [.sortedKeys])
    }

    /// Writes the trace so far to `url`.
    public func write(to url: URL) throws {
        try TraceFile.write(jsonData(), to: url)
    }
}
