import Foundation
import JobKitServer
import JobKitTestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// `jobkit publish`, run as a user runs it, against a launched `jobkit serve`; what was published is checked by
/// asking the server.
@Suite(.timeLimit(.minutes(10))) struct PublishCommandTests {
    private struct Post: Decodable {
        var id: Int
        var text: String
        var mediaIDs: [String]
    }

    private func scratch() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("jobkit-publish-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    private func files(_ sizes: [Int], in folder: URL) throws -> [URL] {
        try sizes.enumerated().map { index, size in
            let url = folder.appendingPathComponent(index == 1 ? "clip (\(index)).mov" : "photo-\(index).jpg")
            try Data((0..<size).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ index) }).write(to: url)
            return url
        }
    }

    private func posts(on server: URL) async throws -> [Post] {
        let (data, _) = try await URLSession.shared.data(from: server.appendingPathComponent("posts"))
        return try JSONDecoder().decode([Post].self, from: data)
    }

    @Test func uploadsEveryFileThenCreatesOnePostAndPrintsItsIdAndURL() async throws {
        let folder = try scratch()
        let server = try await ServeProcess.start(root: folder.appendingPathComponent("root"))
        let base = try #require(server.baseURL)
        let media = try files([300_000, 5_000, 1, 0], in: folder)
        let output = try await runProduct(
            "jobkit",
            arguments: ["publish", "--server", base.absoluteString, "--text", "hello", "-j", "2"]
                + media.map(\.path))
        #expect(output.status == 0, "\(output.stderr)")
        let published = try await posts(on: base)
        #expect(published.count == 1)
        let post = try #require(published.first)
        #expect(
            output.stdout.hasSuffix("post \(post.id): \(base.absoluteString)posts/\(post.id)\n"), "\(output.stdout)")
        #expect(post.text == "hello" && post.mediaIDs.count == 4)
        #expect(post.mediaIDs[1].hasSuffix("-2-clip__1_.mov"), "names the server refuses are made safe")
        for (file, id) in zip(media, post.mediaIDs) {
            let stored = try Data(contentsOf: server.root.appendingPathComponent("media").appendingPathComponent(id))
            #expect(stored == (try Data(contentsOf: file)), "\(id) arrived byte-exact")
        }
        #expect(!output.stdout.contains("\u{1B}"), "no escapes into a file")
        let (_, answer) = try await URLSession.shared.data(from: base.appendingPathComponent("posts/\(post.id)"))
        #expect((answer as? HTTPURLResponse)?.statusCode == 200, "the printed URL is the post's")
    }

    @Test func oneFailedUploadMeansNoPostAndExitCode1NamingTheFile() async throws {
        let folder = try scratch()
        let server = try await ServeProcess.start(
            root: folder.appendingPathComponent("root"), arguments: ["--max-upload-bytes", "100000"])
        let base = try #require(server.baseURL)
        let media = try files([1_000, 200_000, 2_000], in: folder)
        let output = try await runProduct(
            "jobkit",
            arguments: ["publish", "--server", base.absoluteString, "--text", "no", "--json"] + media.map(\.path))
        #expect(output.status == 1, "\(output.stderr)")
        #expect(output.stderr.contains("error: clip (1).mov: ") && output.stderr.contains("413"), "\(output.stderr)")
        #expect(output.stderr.contains("the post was not created: 1 of 3 uploads failed"))
        #expect(try await posts(on: base).isEmpty, "the server has no post")
        let events = output.stdout.split(separator: "\n")
        #expect(events.allSatisfy { $0.hasPrefix("{") && $0.hasSuffix("}") }, "--json: one object per line")
        #expect(events.contains { $0.contains(#""event":"failed""#) })
    }

    @Test func transientFailuresAreRetriedAndThePostIsCreatedOnce() async throws {
        let folder = try scratch()
        let server = try await ServeProcess.start(
            root: folder.appendingPathComponent("root"), arguments: ["--failure-rate", "0.3"])
        let base = try #require(server.baseURL)
        let media = try files([10_000, 20_000, 30_000, 40_000, 50_000], in: folder)
        let output = try await runProduct(
            "jobkit",
            arguments: ["publish", "--server", base.absoluteString, "--text", "retried", "--retry", "20"]
                + media.map(\.path))
        #expect(output.status == 0, "\(output.stdout) \(output.stderr)")
        let published = try await eventually { try await posts(on: base) }
        #expect(published.filter { $0.text == "retried" }.count == 1)
    }

    /// Reads through injected failures (the server's failure rate applies to the test's requests too).
    private func eventually<T>(_ read: () async throws -> T) async throws -> T {
        for _ in 0..<50 {
            if let value = try? await read() { return value }
        }
        return try await read()
    }

    @Test func aPostWhoseAnswerIsLostIsCreatedOnceEvenWhenAskingTheServerFails() async throws {
        let folder = try scratch()
        let root = folder.appendingPathComponent("root")
        let server = try await LoopbackServer.start(.init(root: root))
        // The server stores the first post and loses its answer; every `GET /posts` (asking whether the post
        // exists) fails.
        server.faults.dropNextAnswers(1, method: "POST", path: "/posts")
        server.faults.failNext(1_000, status: 503, method: "GET", path: "/posts")
        let media = try files([1_000, 2_000], in: folder)
        let output: ProcessOutput
        do {
            output = try await runInBackground(
                ["publish", "--server", server.baseURL.absoluteString, "--text", "once", "--retry", "3"]
                    + media.map(\.path))
        } catch {
            await server.stop()
            throw error
        }
        await server.stop()
        #expect(output.status == 0, "\(output.stdout) \(output.stderr)")
        #expect(output.stdout.hasSuffix("post 1: \(server.baseURL.absoluteString)posts/1\n"), "\(output.stdout)")
        let log = try String(contentsOf: root.appendingPathComponent("posts.jsonl"), encoding: .utf8)
        let lines = log.split(separator: "\n")
        #expect(lines.count == 1, "exactly one post: \(log)")
        #expect(lines.first?.contains(#""idempotencyKey":""#) == true, "made with the run's key")
    }

    /// Runs `jobkit` and awaits its end without blocking a thread: the server it talks to runs in this process.
    private func runInBackground(_ arguments: [String]) async throws -> ProcessOutput {
        let folder = try scratch()
        defer { try? FileManager.default.removeItem(at: folder) }
        let stdoutURL = folder.appendingPathComponent("stdout")
        let stderrURL = folder.appendingPathComponent("stderr")
        _ = FileManager.default.createFile(atPath: stdoutURL.path, contents: nil)
        _ = FileManager.default.createFile(atPath: stderrURL.path, contents: nil)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
            .appendingPathComponent("jobkit")
        process.arguments = arguments
        process.standardOutput = try FileHandle(forWritingTo: stdoutURL)
        process.standardError = try FileHandle(forWritingTo: stderrURL)
        let launched: Result<Int32, any Error>?
        launched = await awaitCallback("jobkit \(arguments.first ?? "") to end", timeout: childProcessDeadline) {
            continuation in
            process.terminationHandler = { ended in continuation.resume(returning: .success(ended.terminationStatus)) }
            do {
                try process.run()
            } catch {
                continuation.resume(returning: .failure(error))
            }
        }
        if launched == nil, process.isRunning { process.terminate() }
        let status = try (launched ?? .failure(WaitTimedOut("the child to end", timeout: childProcessDeadline))).get()
        return ProcessOutput(
            status: status, stdout: try String(contentsOf: stdoutURL, encoding: .utf8),
            stderr: try String(contentsOf: stderrURL, encoding: .utf8))
    }

    @Test func ctrlCStopsWithExitCode130AndNoPost() async throws {
        let folder = try scratch()
        let server = try await ServeProcess.start(
            root: folder.appendingPathComponent("root"), arguments: ["--latency", "3000"])
        let base = try #require(server.baseURL)
        let media = try files([1_000, 2_000, 3_000], in: folder)
        let publish = try LaunchedProcess(
            ["publish", "--server", base.absoluteString, "--text", "stopped", "-j", "1"] + media.map(\.path))
        #expect(await publish.send(SIGINT) { publish.stdout.contains("started") }, "\(publish.stderr)")
        #expect(await publish.wait() == 130, "\(publish.stderr)")
        #expect(publish.stderr.contains("interrupted: the post was not created"), "\(publish.stderr)")
        #expect(try await posts(on: base).isEmpty)
    }

    /// A Ctrl-C is never lost, however early it comes: before the command listens it ends the process
    /// (SIGINT's default), after that it stops the command with 130 — never does the post go up
    /// (each upload takes 3 s here: a lost signal would let it).
    @Test func aCtrlCAtAnyMomentStopsThePublishWithoutAPost() async throws {
        let folder = try scratch()
        let server = try await ServeProcess.start(
            root: folder.appendingPathComponent("root"), arguments: ["--latency", "3000"])
        let base = try #require(server.baseURL)
        let media = try files([100], in: folder)
        for delay in stride(from: 0, through: 60_000, by: 4_000) {
            let publish = try LaunchedProcess(
                ["publish", "--server", base.absoluteString, "--text", "stopped"] + media.map(\.path))
            usleep(useconds_t(delay))
            publish.send(SIGINT)
            let status = await publish.wait()
            let stopped = status == 130 || (status == SIGINT && publish.process.terminationReason == .uncaughtSignal)
            #expect(stopped, "after \(delay) µs: exit \(status): \(publish.stderr)")
        }
        #expect(try await posts(on: base).isEmpty)
    }

    @Test func usageErrorsExit64() async throws {
        let folder = try scratch()
        let file = try files([10], in: folder)[0].path
        for arguments in [
            ["--server", "http://127.0.0.1:1/", "--text", "x"],
            ["--server", "ftp://127.0.0.1/", "--text", "x", file],
            ["--server", "http://127.0.0.1:1/", "--text", "x", folder.appendingPathComponent("missing").path],
            ["--server", "http://127.0.0.1:1/", "--text", "x", folder.path],
            ["--server", "http://127.0.0.1:1/", "--text", "x", "-j", "0", file],
            ["--server", "http://127.0.0.1:1/", "--text", "x", "--json", "--quiet", file],
            ["--server", "http://127.0.0.1:1/", "--text", "x", "--idempotency-key", "a\"b", file],
            ["--server", "http://127.0.0.1:1/", "--text", "x", "--idempotency-key", "", file],
        ] {
            let output = try await runProduct("jobkit", arguments: ["publish"] + arguments)
            #expect(output.status == 64, "\(arguments): \(output.stderr)")
            #expect(output.stderr.contains("rror: "), "\(arguments)")
        }
    }

    @Test func aFIFOADeviceOrAProcFileIsAUsageErrorAndNothingIsSent() async throws {
        let folder = try scratch()
        let fifo = folder.appendingPathComponent("pipe").path
        #expect(mkfifo(fifo, 0o600) == 0)
        let file = try files([10], in: folder)[0].path
        let server = try ScriptedServer { _, _ in .respond(200) }
        defer { server.stop() }
        let base = server.url("").absoluteString
        for (media, reason) in [
            (fifo, "is a FIFO"), ("/dev/zero", "is a device"), ("/proc/self/status", "is a file of /proc"),
        ] {
            let output = try await runProduct(
                "jobkit", arguments: ["publish", "--server", base, "--text", "x", file, media])
            #expect(output.status == 64, "\(media): \(output.stderr)")
            #expect(output.stderr.contains(media) && output.stderr.contains(reason), "\(media): \(output.stderr)")
        }
        #expect(server.requests.isEmpty, "nothing was uploaded or posted")
    }

    @Test func aFileThatChangesSizeWhileItIsUploadedFailsItsUploadAndNoPostIsMade() async throws {
        let folder = try scratch()
        let media = try files([2_000], in: folder)[0]
        let gate = Gate()
        let server = try ScriptedServer { request, _ in
            request.method == "PUT" ? .waiting(for: gate, then: .respond(200)) : .respond(201)
        }
        defer { server.stop() }
        let publish = try LaunchedProcess(
            ["publish", "--server", server.url("").absoluteString, "--text", "x", "--retry", "0", media.path])
        let received = await publish.waitUntil { server.requests.contains { $0.method == "PUT" } }
        #expect(received, "\(publish.stderr)")
        let handle = try FileHandle(forWritingTo: media)
        try handle.seekToEnd()
        try handle.write(contentsOf: Data(count: 500))
        try handle.close()
        gate.open()
        #expect(await publish.wait() == 1, "\(publish.stderr)")
        #expect(
            publish.stderr.contains("changed size while it was uploaded (2000 bytes, then 2500)"), "\(publish.stderr)")
        #expect(publish.stderr.contains("the post was not created: 1 of 1 uploads failed"), "\(publish.stderr)")
        #expect(!server.requests.contains { $0.method == "POST" }, "no post")
    }

    @Test func aPostWhoseAnswersAreLostMayHaveBeenCreatedAndARerunWithItsKeyFinishesItOnce() async throws {
        let folder = try scratch()
        let root = folder.appendingPathComponent("root")
        let server = try await LoopbackServer.start(.init(root: root))
        // The server stores the post and loses its answer, and the one retry's.
        server.faults.dropNextAnswers(2, method: "POST", path: "/posts")
        let media = try files([1_000, 2_000], in: folder)
        let arguments = ["publish", "--server", server.baseURL.absoluteString, "--text", "once", "--retry", "1"]
        let first: ProcessOutput
        let second: ProcessOutput
        do {
            first = try await runInBackground(arguments + media.map(\.path))
            let key =
                first.stderr.components(separatedBy: "--idempotency-key ").dropFirst().first?
                .split(separator: " ").first.map(String.init) ?? "none"
            second = try await runInBackground(arguments + ["--idempotency-key", key] + media.map(\.path))
        } catch {
            await server.stop()
            throw error
        }
        await server.stop()
        #expect(first.status == 1, "\(first.stderr)")
        #expect(first.stderr.contains("error: the post may have been created: "), "\(first.stderr)")
        #expect(first.stderr.contains("run the same command again with --idempotency-key "), "\(first.stderr)")
        #expect(!first.stderr.contains("not created"), "\(first.stderr)")
        #expect(second.status == 0, "\(second.stderr)")
        #expect(second.stdout.hasSuffix("post 1: \(server.baseURL.absoluteString)posts/1\n"), "\(second.stdout)")
        let log = try String(contentsOf: root.appendingPathComponent("posts.jsonl"), encoding: .utf8)
        #expect(log.split(separator: "\n").count == 1, "exactly one post: \(log)")
    }

    @Test func anAnswerThatIsNotAPostMayHaveBeenCreatedAndARefusalWasNot() async throws {
        let folder = try scratch()
        let media = try files([1_000], in: folder)[0]
        for (answer, expected) in [
            (ScriptedServer.Reply.respond(201, body: Data("<html>junk</html>".utf8)), "may have been created"),
            (
                .respond(201, headers: ["Content-Type": "application/json"], body: Data(#"{"text":"x"}"#.utf8)),
                "may have been created"
            ),
            (.respond(502), "may have been created"),
            (.respond(422, body: Data("unknown media".utf8)), "the post was not created: "),
        ] {
            let server = try ScriptedServer { request, _ in request.method == "POST" ? answer : .respond(200) }
            defer { server.stop() }
            let output = try await runProduct(
                "jobkit",
                arguments: [
                    "publish", "--server", server.url("").absoluteString, "--text", "x", "--retry", "0",
                    media.path,
                ])
            #expect(output.status == 1, "\(output.stderr)")
            #expect(output.stderr.contains(expected), "\(answer): \(output.stderr)")
            if expected.hasPrefix("may") {
                #expect(!output.stderr.contains("not created"), "\(output.stderr)")
                #expect(output.stderr.contains("--idempotency-key "), "\(output.stderr)")
            }
        }
    }

    @Test func ctrlCDuringThePostWhoseCheckFailsOrStallsSaysItMayHaveBeenCreated() async throws {
        let folder = try scratch()
        let media = try files([1_000], in: folder)[0]
        for stalls in [false, true] {
            let never = Gate()
            let server = try ScriptedServer { request, _ in
                switch request.method {
                case "POST": .waiting(for: never, then: .respond(201))
                case "GET": stalls ? .waiting(for: never, then: .respond(200)) : .respond(503)
                default: .respond(200)
                }
            }
            defer {
                never.open()
                server.stop()
            }
            let publish = try LaunchedProcess(
                ["publish", "--server", server.url("").absoluteString, "--text", "x", "--retry", "0", media.path])
            let posting = await publish.send(SIGINT) { server.requests.contains { $0.method == "POST" } }
            #expect(posting, "\(publish.stderr)")
            #expect(await publish.wait() == 130, "\(publish.stderr)")
            #expect(publish.stderr.contains("interrupted: the post may have been created (cannot check: "))
            #expect(publish.stderr.contains("--idempotency-key "), "\(publish.stderr)")
            #expect(!publish.stderr.contains("not created"), "\(publish.stderr)")
        }
    }
}
