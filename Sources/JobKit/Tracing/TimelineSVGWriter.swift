import Foundation

/// A tracer that draws an SVG timeline: one lane per concurrency slot, one bar per job coloured by
/// its outcome, and the spans of groups and sequences on top — a picture that shows at a glance how
/// many jobs ran at once.
///
/// **Threading.** Thread-safe: runs record into it from any thread at once, and `write(to:)` (or reading the
/// SVG) may be called from any thread, at any time, with what was recorded so far.
///
/// ```swift
/// let timeline = TimelineSVGWriter()
/// downloads.traced(by: timeline).perform { _ in try? timeline.write(to: URL(filePath: "downloads.svg")) }
/// ```
public final class TimelineSVGWriter: JobTracer {
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

    /// The colour of a bar for each outcome.
    static let colours: [TraceLog.Outcome: String] = [
        .finished: "#43a047", .failed: "#e53935", .cancelled: "#9e9e9e", .unfinished: "#fbc02d",
    ]

    /// The timeline so far, as an SVG document.
    public func svg() -> String {
        let spans = recorder.spans
        let origin = spans.map(\.start).min() ?? 0
        let lastEnd = max(spans.compactMap(\.end).max() ?? origin, origin + 1)
        let width = 1000.0
        let left = 90.0
        let laneHeight = 18.0
        let parentLanes = (spans.filter(\.isParent).map(\.lane).max() ?? -1) + 1
        let jobLanes = (spans.filter { !$0.isParent }.map(\.lane).max() ?? -1) + 1
        let height = Double(parentLanes + jobLanes) * laneHeight + 40
        func x(_ time: UInt64) -> Double {
            left + (width - left - 10) * Double(time - origin) / Double(lastEnd - origin)
        }

        var body = ""
        for lane in 0..<jobLanes {
            let y = 10 + Double(parentLanes + lane) * laneHeight
            body += "<text x=\"4\" y=\"\(y + 13)\" class=\"label\">slot \(lane + 1)</text>\n"
        }
        for span in spans {
            let row = span.isParent ? span.lane : parentLanes + span.lane
            let y = 10 + Double(row) * laneHeight
            let start = x(span.start)
            let barWidth = max(x(span.end ?? lastEnd) - start, 1)
            let kind = span.isParent ? "group" : "job"
            let fill = span.isParent ? "#90caf9" : Self.colours[span.outcome]!
            body += """
                <rect class="\(kind) \(span.outcome.rawValue)" x="\(rounded(start))" y="\(y)" \
                width="\(rounded(barWidth))" height="\(laneHeight - 4)" fill="\(fill)">\
                <title>\(escaped(span.name)): \(span.outcome.rawValue)</title></rect>

                """
        }
        let milliseconds = Double(lastEnd - origin) / 1e6
        return """
            <?xml version="1.0" encoding="UTF-8"?>
            <svg xmlns="http://www.w3.org/2000/svg" width="\(Int(width))" height="\(Int(height))" \
            font-family="sans-serif" font-size="11">
            <style>.label { fill: #444; }</style>
            \(body)<text x="\(left)" y="\(height - 8)" class="label">\(jobLanes) slots, \(spans.count) runs, \
            \(rounded(milliseconds)) ms</text>
            </svg>

            """
    }

    /// Writes the timeline so far to `url`.
    public func write(to url: URL) throws {
        try TraceFile.write(Data(svg().utf8), to: url)
    }

    private func rounded(_ value: Double) -> String {
        String(format: "%.1f", value)
    }

    private func escaped(_ text: String) -> String {
        text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
            .replacingOccurrences(of: ">", with: "&gt;").replacingOccurrences(of: "\"", with: "&quot;")
    }
}
