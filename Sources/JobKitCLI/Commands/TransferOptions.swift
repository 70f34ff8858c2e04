import ArgumentParser

/// The options `jobkit download` and `jobkit publish` share: width, retries and the form of the output.
struct TransferOptions: ParsableArguments {
    /// The most transfers a command runs at once.
    static let maximumConcurrent = 256
    /// The most retries of one transfer.
    static let maximumRetries = 100

    @Option(
        name: [.customShort("j"), .long],
        parsing: .unconditional,  // `-j -1` is a value (refused by `validate`), not an unknown option
        help: ArgumentHelp("At most this many transfers at once (1...\(Self.maximumConcurrent)).", valueName: "n"))
    var maxConcurrent = 8

    @Option(
        parsing: .unconditional,
        help: ArgumentHelp(
            "Retry a transfer up to this many times after a transient failure (a refused or dropped connection, "
                + "a timeout, 408, 429, 5xx), waiting longer each time (0...\(Self.maximumRetries)).",
            valueName: "n"))
    var retry = 3

    @Flag(help: "Write one JSON object per event on standard output (for scripts) instead of the display.")
    var json = false

    @Flag(
        name: [.customShort("q"), .long],
        help: "Show no progress and no summary: only failures (and, for publish, the post's id and URL).")
    var quiet = false

    func validate() throws {
        guard (1...Self.maximumConcurrent).contains(maxConcurrent) else {
            throw ValidationError(
                "-j/--max-concurrent must be at least 1 and at most \(Self.maximumConcurrent) (1...\(Self.maximumConcurrent)); "
                    + "it is \(maxConcurrent).")
        }
        guard (0...Self.maximumRetries).contains(retry) else {
            throw ValidationError("--retry must be 0...\(Self.maximumRetries); it is \(retry).")
        }
        guard !(json && quiet) else { throw ValidationError("--json and --quiet cannot be used together.") }
    }
}
