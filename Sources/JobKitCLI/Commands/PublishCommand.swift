import ArgumentParser
import Foundation
import JobKitNetworking

/// `jobkit publish --server URL --text "…" FILE…`: uploads the media, then creates the post with them — only
/// if every upload succeeded.
struct PublishCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "publish",
        abstract: "Upload media files to a JobKit server, then create a post with them — all or nothing.",
        discussion: """
            Uploads every FILE (at most -j at once, with progress), retrying transient failures (a dropped \
            connection, 408, 429, 5xx) up to --retry times; creates the post only when every upload \
            succeeded, and prints its id and URL. Every attempt at the post carries the run's Idempotency-Key, \
            and the server answers a key it has seen with the post it made for it, so the post is never created \
            twice, even when an answer is lost. When the command cannot tell whether the server made the post \
            (its answer lost, not a post, or the check after Ctrl-C failing), it says the post may have been \
            created and prints the key: run the same command again with --idempotency-key KEY to finish it \
            without a second post. Each FILE must be a regular file (not a FIFO, a device or a /proc file), and \
            one that changes while it is uploaded fails its upload. Works against `jobkit serve`. \
            Exit codes: 0 published; 1 an upload or the post failed (each failure is listed with why; no \
            post was created unless the message says it may have been); 64 a wrong command line; 130 stopped \
            by Ctrl-C (no post was created unless the message says so).
            """)

    @Option(help: ArgumentHelp("The JobKit server to publish to, like http://127.0.0.1:8080/.", valueName: "url"))
    var server: String

    @Option(help: ArgumentHelp("The post's text.", valueName: "text"))
    var text: String

    @Argument(
        help: ArgumentHelp(
            "The media to upload and attach to the post, in order: regular files.", valueName: "file"))
    var files: [String] = []

    @Option(
        help: ArgumentHelp(
            "The post's Idempotency-Key (1 to 255 printable ASCII characters, no quote or backslash): give the "
                + "key a run printed when it could not tell whether the post was made, and the server answers "
                + "with that post instead of making another (the same text and files). Default: a new key.",
            valueName: "key"))
    var idempotencyKey: String?

    @OptionGroup var transfer: TransferOptions

    /// The longest text: the server takes post bodies up to 64 KiB.
    static let maximumTextBytes = 32 * 1024

    func validate() throws {
        guard let url = URL(string: server), ["http", "https"].contains(url.scheme?.lowercased() ?? ""),
            url.host != nil
        else { throw ValidationError("--server must be an http:// URL, like http://127.0.0.1:8080/") }
        guard !files.isEmpty else { throw ValidationError("give at least one media file to upload.") }
        for file in files {
            if let problem = PublishMedia.problem(with: file) { throw ValidationError("cannot upload \(problem).") }
        }
        guard text.utf8.count <= Self.maximumTextBytes else {
            throw ValidationError("--text must be at most \(Self.maximumTextBytes) bytes.")
        }
        if let idempotencyKey, let problem = Self.problem(withKey: idempotencyKey) {
            throw ValidationError("--idempotency-key \(problem).")
        }
    }

    /// The longest Idempotency-Key: the server's limit.
    static let maximumKeyLength = 255

    /// Why `key` cannot be an Idempotency-Key, or nil: 1 to 255 printable ASCII characters, without the quote
    /// and backslash a Structured Field string would have to escape.
    static func problem(withKey key: String) -> String? {
        guard !key.isEmpty else { return "must not be empty" }
        guard key.utf8.count <= maximumKeyLength else {
            return "must have at most \(maximumKeyLength) characters; it has \(key.utf8.count)"
        }
        guard
            key.utf8.allSatisfy({ (0x20...0x7E).contains($0) && $0 != UInt8(ascii: "\"") && $0 != UInt8(ascii: "\\") })
        else { return "may have only printable ASCII characters, without a quote or a backslash" }
        return nil
    }

    func run() async throws {
        let serverURL = URL(string: server)!  // validated
        let exit = await Self.publish(
            server: serverURL, text: text, files: files.map { URL(fileURLWithPath: $0) }, options: transfer,
            idempotencyKey: idempotencyKey ?? UUID().uuidString)
        if exit != .success { throw exit }
    }

    /// Runs a publish on the main actor; returns the exit code.
    @MainActor
    static func publish(
        server: URL, text: String, files: [URL], options: TransferOptions, idempotencyKey: String
    ) async -> ExitCode {
        StandardOutput.makeLineBuffered()
        let display = TransferDisplay.standard(json: options.json, quiet: options.quiet)
        let client = TransferClient(maxConnectionsPerHost: options.maxConcurrent)
        let publisher = Publisher(
            server: server, text: text, files: files, maxConcurrent: options.maxConcurrent, retries: options.retry,
            display: display, client: client, idempotencyKey: idempotencyKey)
        let interrupt = InterruptSignal {
            guard publisher.interrupt() else { return }
            display.finish()
            printError("interrupted: the post was not created")
            Foundation.exit(CommandLineError.interrupted.rawValue)  // flushes stdout and stderr
        }
        defer { interrupt.cancel() }
        let outcome = await publisher.publish()
        display.finish()
        switch outcome {
        case .published(let post):
            report(post, server: server, json: options.json)
            return .success
        case .uploadsFailed(let failures):
            for failure in failures { printError("\(failure.name): \(failure.reason)") }
            printError("the post was not created: \(failures.count) of \(files.count) uploads failed")
            return CommandLineError.failure
        case .postFailed(let reason):
            printError("the post was not created: \(reason)")
            return CommandLineError.failure
        case .postUnknown(let reason):
            printError("the post may have been created: \(reason); \(rerunHint(idempotencyKey))")
            return CommandLineError.failure
        case .interrupted(.created(let post)):
            printError("interrupted, but the post had been created already")
            report(post, server: server, json: options.json)
            exitInterrupted()
        case .interrupted(.notCreated):
            printError("interrupted: the post was not created")
            exitInterrupted()
        case .interrupted(.unknown(let reason)):
            printError(
                "interrupted: the post may have been created (cannot check: \(reason)); \(rerunHint(idempotencyKey))")
            exitInterrupted()
        }
    }

    /// Exits with 130 now rather than unwind: the post request was just cancelled, and FoundationNetworking
    /// (swift-corelibs, Swift 6.3) may trap on a task cancelled as it ends if its callbacks still run (see
    /// `RunningTransfer.cancel`). `exit` flushes standard output and error.
    private static func exitInterrupted() -> Never {
        Foundation.exit(CommandLineError.interrupted.rawValue)
    }

    /// How to finish a post that may have been made: the same command with its key (quoted for a shell when it
    /// has more than letters, digits, `-`, `_` and `.`).
    static func rerunHint(_ key: String) -> String {
        let plain = key.unicodeScalars.allSatisfy {
            $0.properties.isASCIIHexDigit || "-_.".unicodeScalars.contains($0) || ("a"..."z").contains($0)
                || ("A"..."Z").contains($0)
        }
        let shown = plain ? key : "'" + key.replacingOccurrences(of: "'", with: "'\\''") + "'"
        return "run the same command again with --idempotency-key \(shown) to finish it without posting twice"
    }

    /// `post 3: http://…/posts/3` (or its JSON event) on standard output.
    private static func report(_ post: Publisher.CreatedPost, server: URL, json: Bool) {
        let url = server.appendingPathComponent("posts").appendingPathComponent(String(post.id)).absoluteString
        if json {
            struct Published: Encodable {
                var event = "published"
                var id: Int
                var url: String
                var mediaIDs: [String]
            }
            let line = TransferEventFormat.jsonLine(Published(id: post.id, url: url, mediaIDs: post.mediaIDs))
            StandardOutput.write((line ?? "") + "\n")
        } else {
            StandardOutput.write("post \(post.id): \(url)\n")
        }
    }

    private static func printError(_ message: String) {
        FileHandle.standardError.write(Data("error: \(message)\n".utf8))
    }
}
