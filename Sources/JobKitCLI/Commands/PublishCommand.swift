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
            twice, even when an answer is lost. Works against `jobkit serve`. \
            Exit codes: 0 published; 1 an upload or the post failed (each failure is listed with why; no \
            post was created); 64 a wrong command line; 130 stopped by Ctrl-C (no post was created unless \
            the message says so).
            """)

    @Option(help: ArgumentHelp("The JobKit server to publish to, like http://127.0.0.1:8080/.", valueName: "url"))
    var server: String

    @Option(help: ArgumentHelp("The post's text.", valueName: "text"))
    var text: String

    @Argument(help: ArgumentHelp("The media to upload and attach to the post, in order.", valueName: "file"))
    var files: [String] = []

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
    }

    func run() async throws {
        let serverURL = URL(string: server)!  // validated
        let exit = await Self.publish(
            server: serverURL, text: text, files: files.map { URL(fileURLWithPath: $0) }, options: transfer)
        if exit != .success { throw exit }
    }

    /// Runs a publish on the main actor; returns the exit code.
    @MainActor
    static func publish(server: URL, text: String, files: [URL], options: TransferOptions) async -> ExitCode {
        StandardOutput.makeLineBuffered()
        let display = TransferDisplay.standard(json: options.json, quiet: options.quiet)
        let client = TransferClient(maxConnectionsPerHost: options.maxConcurrent)
        let publisher = Publisher(
            server: server, text: text, files: files, maxConcurrent: options.maxConcurrent, retries: options.retry,
            display: display, client: client)
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
        case .interrupted(let post):
            if let post {
                printError("interrupted, but the post had been created already")
                report(post, server: server, json: options.json)
            } else {
                printError("interrupted: the post was not created")
            }
            // Exit now rather than unwind: the post request was just cancelled, and FoundationNetworking
            // (swift-corelibs, Swift 6.3) may trap on a task cancelled as it ends if its callbacks
            // still run (see `RunningTransfer.cancel`). `exit` flushes standard output and error.
            Foundation.exit(CommandLineError.interrupted.rawValue)
        }
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
