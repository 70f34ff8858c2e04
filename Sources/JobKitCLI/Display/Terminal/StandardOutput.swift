// Only the C library here: `stdout` is a C global, which Swift 6 accepts through a `@preconcurrency` import
// that no Foundation import in the same file overrides.
#if canImport(Glibc)
    @preconcurrency import Glibc
#elseif canImport(Darwin)
    @preconcurrency import Darwin
#endif

/// The process's standard output.
enum StandardOutput {
    /// Flushes standard output at every newline, also into a pipe or a file (where C buffers whole blocks), so
    /// that `jobkit serve > log` shows each line at once. Call it before the first `print`.
    static func makeLineBuffered() {
        setvbuf(stdout, nil, _IOLBF, 0)
    }

    /// Whether standard output is a terminal (not a pipe or a file).
    static var isTerminal: Bool {
        isatty(STDOUT_FILENO) == 1
    }

    /// The terminal's width in columns, or nil when standard output is not a terminal (or says 0).
    static var columns: Int? {
        windowSize.flatMap { $0.ws_col > 0 ? Int($0.ws_col) : nil }
    }

    /// The terminal's height in lines, or nil when standard output is not a terminal (or says 0).
    static var lines: Int? {
        windowSize.flatMap { $0.ws_row > 0 ? Int($0.ws_row) : nil }
    }

    private static var windowSize: winsize? {
        var size = winsize()
        #if canImport(Glibc)
            let request = UInt(TIOCGWINSZ)
        #else
            let request = TIOCGWINSZ
        #endif
        return ioctl(STDOUT_FILENO, request, &size) == 0 ? size : nil
    }

    /// Writes `text` as it is (no newline added) and flushes it at once.
    static func write(_ text: String) {
        fputs(text, stdout)
        fflush(stdout)
    }
}
