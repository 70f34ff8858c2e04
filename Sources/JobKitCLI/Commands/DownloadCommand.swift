import ArgumentParser
import Foundation
import JobKit
import JobKitNetworking
import Logging

/// `jobkit download URL… | -i FILE`: downloads into a folder through a `DownloadManager`, resumable after
/// Ctrl-C or a crash, verified when a checksum is given.
struct DownloadCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "download",
        abstract: "Download files into a folder: at most -j at once, resumable, verified, with live progress.",
        discussion: """
            Files take the last path component of their URL as their name, or out=NAME from an input file. \
            An input file (-i, as aria2's) has a URL per line, each followed by indented option lines \
            (out=NAME; dir=PATH, a folder under -o made when missing: a relative path without '..', never \
            outside -o and never through a symbolic link found there, with its own journal, downloaded after \
            the files of -o itself; checksum=ALGORITHM=HEX with md5, sha-1, sha-224, sha-256, sha-384 or sha-512; \
            header=NAME: VALUE, repeatable; referer=URL; user-agent=TEXT; max-download-limit=SPEED; split=N), and # comments. Headers go with \
            every request of their file, resumes and retries included; Range, Host, Accept-Encoding, \
            If-Range and the other headers a download or its connection sets are refused (exit 64). The output folder keeps a journal \
            (.jobkit-downloads.journal): run the same command again after Ctrl-C, a crash or kill -9 and \
            completed files are kept (not fetched again) while partial ones resume with ranges, when the \
            server proves they are the same file. A file whose checksum does not match is removed; nothing \
            else that is in the way (a folder, a file this command did not download) is ever removed. \
            On a terminal the display is live; into a pipe or with NO_COLOR, one plain line per change. \
            Exit codes: 0 every file downloaded; 1 any failed (each is listed with why); 64 a wrong command \
            line or input file; 130 stopped by Ctrl-C (run again to resume).
            """)

    @Argument(help: ArgumentHelp("The http:// or https:// URLs to download.", valueName: "url"))
    var urls: [String] = []

    @Option(
        name: [.customShort("i"), .long],
        help: ArgumentHelp(
            "Read URLs, with their out=, dir=, checksum=, header=, referer=, user-agent=, max-download-limit= "
                + "and split= options, from this "
                + "aria2-style file ('-': standard input).",
            valueName: "file"))
    var inputFile: String?

    @Option(
        name: [.customShort("o"), .long],
        help: ArgumentHelp("Save the files into this folder (created if missing).", valueName: "dir"))
    var output = "."

    @Flag(
        help: ArgumentHelp(
            "Also survive a power loss or an OS crash: flush each file to disk before it takes its name, its "
                + "folder after, and the journal (a few milliseconds a file), and each partial file every 16 MiB "
                + "(after a reboot it resumes from there). Without it, files and the journal survive the command "
                + "being killed or crashing at any moment, but are not flushed (as curl, aria2c), and a partial "
                + "file starts over after a reboot."))
    var fsync = false

    @Flag(
        help: ArgumentHelp(
            "Replace what is under a file's name: a file this folder's journal holds for another URL, or any "
                + "file in the way (aria2's flag). Without it such a download fails, named, and the rest go on."))
    var allowOverwrite = false

    @Flag(
        help: ArgumentHelp(
            "Name each file that has no out= as its server suggests in Content-Disposition (RFC 6266 filename*= "
                + "or filename=), asked with a GET of its first byte before the downloads start; only the last "
                + "path component is kept, made safe by the same rule as URL names. Without a suggestion, or when "
                + "another file of the command has that name, the URL's name is used (aria2's flag)."))
    var contentDisposition = false

    @Option(
        help: ArgumentHelp(
            "Write a Chrome trace (Perfetto, chrome://tracing) of every download and its attempts. Never over the "
                + "download folder's own files: a download's file, a partial download (.part…), the journal "
                + "(.jobkit…), a dir= subfolder, any file that exists in the folder or a hard link to one is "
                + "refused (exit 64), after resolving '..' and symbolic links.",
            valueName: "file.json"))
    var trace: String?

    @Option(
        help: ArgumentHelp(
            "Log the downloads on standard error from this level on: trace, debug (each download's start, "
                + "responses and end), info, notice, warning (retries), error (failures) or critical. "
                + "Without it nothing is logged.",
            valueName: "level"))
    var logLevel: Logger.Level?

    @Option(
        help: ArgumentHelp(
            "At most this many bytes a second for all downloads together, shared evenly, as aria2's: 500K, 2M "
                + "(K = 1024, M = 1024 x 1024), 0 for no limit. Through the connections' own flow control: the "
                + "next chunk is read only when the limit allows.",
            valueName: "speed"))
    var maxOverallDownloadLimit: String?

    @Option(
        help: ArgumentHelp(
            "At most this many bytes a second for each download (as aria2's; an input file's "
                + "max-download-limit= sets one file's): 500K, 2M, 0 for no limit.",
            valueName: "speed"))
    var maxDownloadLimit: String?

    @Option(
        name: [.customShort("x"), .customLong("max-connection-per-server")],
        parsing: .unconditional,
        help: ArgumentHelp(
            "Fetch each file over up to this many connections, 1 to 16 (aria2's flag; an input file's split= "
                + "sets one file's): when its server gives its length, accepts ranges and has a strong ETag or a "
                + "Last-Modified date, the file is split into ranges fetched in parallel (none under 1 MiB), each "
                + "resumed where it stopped after Ctrl-C or kill -9. Each connection counts against -j while it is "
                + "used: a file not split holds one. A range answered for another version starts the file over on "
                + "one connection.",
            valueName: "n"))
    var maxConnectionPerServer = 1

    @Option(
        help: ArgumentHelp(
            "Trust the certificate authorities in this PEM file too, besides the system's (aria2's flag): for "
                + "HTTPS servers with a private CA.",
            valueName: "file"))
    var caCertificate: String?

    @Flag(
        name: .customLong("http1.1"),
        help: ArgumentHelp(
            "Speak HTTP/1.1 only (as curl's --http1.1). Without it HTTPS negotiates HTTP/2 when the server offers it, "
                + "and the downloads to one host share one connection."))
    var http1_1 = false

    @OptionGroup var transfer: TransferOptions

    func validate() throws {
        guard !urls.isEmpty || inputFile != nil else {
            throw ValidationError("give at least one URL, or an input file with -i FILE.")
        }
        guard !output.isEmpty else { throw ValidationError("-o/--output needs a folder.") }
        _ = try speeds()
        guard (1...16).contains(maxConnectionPerServer) else {
            throw ValidationError("-x/--max-connection-per-server: \(maxConnectionPerServer) is not from 1 to 16.")
        }
    }

    /// `--max-overall-download-limit` and `--max-download-limit`, in bytes a second (nil: none).
    func speeds() throws -> (overall: Int64?, item: Int64?) {
        func parse(_ text: String?, _ option: String) throws -> Int64? {
            guard let text else { return nil }
            do {
                return try SpeedLimit.parse(text)
            } catch {
                throw ValidationError("\(option): \(error.message).")
            }
        }
        return (
            try parse(maxOverallDownloadLimit, "--max-overall-download-limit"),
            try parse(maxDownloadLimit, "--max-download-limit")
        )
    }

    func run() async throws {
        var plan: DownloadPlan
        var network = DownloadNetworkSettings()
        (network.overallLimit, network.itemLimit) = try speeds()
        network.http1Only = http1_1
        network.connections = maxConnectionPerServer
        do {
            if let caCertificate {
                network.caCertificates = try DownloadNetworkSettings.certificates(at: caCertificate)
            }
            let entries = try inputFile.map { try DownloadInputFile.read($0) } ?? []
            plan = try DownloadPlan.make(
                urls: urls, entries: entries, source: inputFile.map { $0 == "-" ? "standard input" : $0 },
                checksumProblem: { text in
                    do {
                        _ = try Checksum(parsing: text)
                        return nil
                    } catch {
                        return error.localizedDescription
                    }
                })
        } catch let error as DownloadInputFile.ParseError {
            throw CommandLineError.usage(error.localizedDescription)
        } catch {
            throw CommandLineError.usage(CommandLineError.describe(error))
        }
        // Before anything is fetched, and again once the servers have named the files.
        try checkOutputPaths(plan)
        if contentDisposition {
            let named = plan.items.indices.filter { plan.items[$0].namedByURL }
            // Through the same TLS trust and HTTP version as the downloads.
            var settings = DownloadManager.Configuration()
            network.apply(to: &settings)
            let values = await ContentDisposition.probe(
                named.map { (plan.items[$0].url, plan.items[$0].headers.map { ($0.name, $0.value) }) },
                width: transfer.maxConcurrent, tls: settings.tlsConfiguration, httpVersion: settings.httpVersion)
            var names = [String?](repeating: nil, count: plan.items.count)
            for (index, value) in zip(named, values) {
                names[index] = value.flatMap(DownloadNaming.name(fromContentDisposition:))
            }
            plan = plan.naming(names)
            try checkOutputPaths(plan)
        }
        let chromeTrace = trace.map { _ in ChromeTraceWriter() }
        let exit = await DownloadSession.run(
            plan, into: URL(fileURLWithPath: output, isDirectory: true), options: transfer,
            durability: fsync ? .system : .process, allowOverwrite: allowOverwrite,
            tracers: chromeTrace.map { [$0] } ?? [], logger: logLevel.map(Self.logger), network: network,
            outputPaths: outputPaths)
        // A usage error (an output path the journal holds) writes nothing; a file that appeared in the folder
        // while the downloads ran is never replaced either.
        if exit != CommandLineError.usage, let chromeTrace, let trace {
            try checkOutputPaths(plan)
            do {
                try chromeTrace.write(to: URL(fileURLWithPath: trace))
            } catch {
                throw CommandLineError.report(error)
            }
            if !transfer.json && !transfer.quiet { print("trace written to \(trace)") }
        }
        if exit != .success { throw exit }
    }

    /// The files the command writes besides the downloads, by option: never one of the download folder's
    /// (`OutputPathGuard`).
    var outputPaths: [(option: String, path: String)] {
        trace.map { [("--trace", $0)] } ?? []
    }

    /// Throws a usage error (64) when an output path would replace a file of the plan's download folders.
    private func checkOutputPaths(_ plan: DownloadPlan) throws {
        for (option, path) in outputPaths {
            if let problem = OutputPathGuard.problem(with: path, option: option, folder: output, plan: plan) {
                throw CommandLineError.usage(problem)
            }
        }
    }

    /// A logger that writes lines from `level` on to standard error, with the secrets of URLs and credential
    /// headers hidden (`RedactingLogHandler`): the manager's lines and AsyncHTTPClient's alike.
    static func logger(_ level: Logger.Level) -> Logger {
        var logger = Logger(
            label: "jobkit", factory: { RedactingLogHandler(StreamLogHandler.standardError(label: $0)) })
        logger.logLevel = level
        return logger
    }
}

extension Logger.Level: @retroactive ExpressibleByArgument {}
