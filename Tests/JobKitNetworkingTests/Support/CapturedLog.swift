import JobKitTestSupport
import Logging

/// A `LogHandler` that keeps every line it is given, for a test to read.
struct CapturedLog: LogHandler {
    /// One logged line: its level, message and metadata (the logger's and the line's).
    struct Line: Sendable {
        let level: Logger.Level
        let message: String
        let metadata: [String: String]
    }

    private let lines = Locked<[Line]>([])
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .trace

    /// A logger at `level` that logs into this capture.
    func logger(level: Logger.Level = .debug) -> Logger {
        var logger = Logger(label: "test", factory: { _ in self })
        logger.logLevel = level
        return logger
    }

    /// Every line so far, in order.
    var all: [Line] { lines.current }

    /// The lines of the download named `name`.
    func lines(of name: String) -> [Line] { all.filter { $0.metadata["download.name"] == name } }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        let merged = metadata.merging(event.metadata ?? [:]) { $1 }
        let line = Line(
            level: event.level, message: "\(event.message)", metadata: merged.mapValues { "\($0)" })
        lines.withLock { $0.append(line) }
    }
}
