import Foundation
import JobKitTestSupport
import Testing

/// `jobkit download`, run as a user runs it, against a launched `jobkit serve` that logs every request.
@Suite(.timeLimit(.minutes(10))) struct DownloadCommandTests {
    @Test func twoHundredSmallAndFourLargeFilesArriveByteExact() async throws {
        let fixture = try DownloadFixture()
        defer { fixture.cleanUp() }
        let small = try fixture.make("small", count: 200) { 1 + $0 * 397 % 50_000 }
        let large = try fixture.make("large", count: 4) { 16 << 20 | $0 }
        let (server, base) = try await fixture.serve()
        let list = try fixture.inputFile(small + large, base: base)
        let output = try await runProduct(
            "jobkit", arguments: ["download", "-i", list.path, "-o", fixture.output.path])
        #expect(output.status == 0, "\(output.stderr)")
        #expect((small + large).allSatisfy(fixture.arrived))
        #expect(output.stdout.hasPrefix("started ") && !output.stdout.contains("\u{1B}"), "plain lines into a file")
        let summary = try #require(output.stdout.split(separator: "\n").last)
        #expect(summary.hasPrefix("downloaded 204 files (") && summary.contains(" MiB) in "), "\(summary)")
        #expect(fixture.requests().count == 204, "one request a file")
        _ = server
    }

    @Test func withFsyncFilesArriveAndTheHelpSaysWhatItGuarantees() async throws {
        let fixture = try DownloadFixture()
        defer { fixture.cleanUp() }
        let files = try fixture.make("file", count: 5) { 10_000 + $0 }
        let (server, base) = try await fixture.serve()
        let list = try fixture.inputFile(files, base: base)
        let output = try await runProduct(
            "jobkit", arguments: ["download", "--fsync", "-i", list.path, "-o", fixture.output.path])
        #expect(output.status == 0, "\(output.stderr)")
        #expect(files.allSatisfy(fixture.arrived))
        let help = try await runProduct("jobkit", arguments: ["download", "--help"])
        #expect(help.stdout.contains("--fsync") && help.stdout.contains("power loss"), "\(help.stdout)")
        _ = server
    }

    @Test func killedMidRunThenRunAgainFetchesNoCompletedFileAgainAndResumesPartialOnesWithRanges() async throws {
        let fixture = try DownloadFixture()
        defer { fixture.cleanUp() }
        let small = try fixture.make("small", count: 20) { 1000 + $0 }
        let large = try fixture.make("large", count: 4) { 20 << 20 | $0 }
        let (server, base) = try await fixture.serve()
        let list = try fixture.inputFile(small + large, base: base)
        let arguments = ["download", "-i", list.path, "-o", fixture.output.path, "-j", "3"]
        let first = try LaunchedProcess(arguments)
        // Kill as soon as a large file is partly there (polling the folder: the point to kill at, not an outcome).
        let partial = await first.send(SIGKILL) { large.contains { fixture.partSize($0) >= 1 << 20 } }
        #expect(await first.wait() == SIGKILL, "\(first.stderr)")
        try #require(partial, "the run ended before a large file was partly downloaded: \(first.stdout.suffix(300))")
        let completedBefore = (small + large).filter(fixture.arrived)
        let partialBefore = large.filter { fixture.partSize($0) > 0 }
        let requestsBefore = fixture.requests().count

        let second = try await runProduct("jobkit", arguments: arguments)
        #expect(second.status == 0, "\(second.stderr)")
        #expect((small + large).allSatisfy(fixture.arrived), "every file byte-exact")
        let after = fixture.requests(from: requestsBefore)
        for name in completedBefore {
            #expect(!after.contains { $0.contains("/files/\(name) ") }, "\(name) was complete: not fetched again")
        }
        #expect(!partialBefore.isEmpty)
        for name in partialBefore {
            #expect(
                after.contains { $0.contains("/files/\(name) range=bytes=") && !$0.contains("range=bytes=0-") },
                "\(name) resumed with a range: \(after.filter { $0.contains(name) })")
        }
        _ = server
    }

    @Test func aChecksumMismatchExits1AndLeavesNoBadFile() async throws {
        let fixture = try DownloadFixture()
        defer { fixture.cleanUp() }
        let names = try fixture.make("f", count: 2) { 10_000 + $0 }
        let (server, base) = try await fixture.serve()
        let wrong = String(repeating: "0", count: 64)
        let list = try fixture.inputFile(names, base: base) { name in
            name == names[0] ? ["checksum=sha-256=\(wrong)", "out=bad.bin"] : []
        }
        let output = try await runProduct(
            "jobkit", arguments: ["download", "-i", list.path, "-o", fixture.output.path])
        #expect(output.status == 1, "\(output.stderr)")
        #expect(output.stderr.contains("error: bad.bin (") && output.stderr.contains("checksum"), "\(output.stderr)")
        #expect(output.stderr.hasSuffix("error: 1 of 2 downloads failed\n"))
        let left = try FileManager.default.contentsOfDirectory(atPath: fixture.output.path)
        #expect(!left.contains { $0.hasPrefix("bad.bin") }, "no bad file, no .part: \(left)")
        #expect(fixture.arrived(names[1]))
        _ = server
    }

    @Test func aDirectoryInTheWayIsNeverDeleted() async throws {
        let fixture = try DownloadFixture()
        defer { fixture.cleanUp() }
        let names = try fixture.make("f", count: 3) { 5_000 + $0 }
        let (server, base) = try await fixture.serve()
        let inTheWay = fixture.output.appendingPathComponent(names[1])
        try FileManager.default.createDirectory(at: inTheWay, withIntermediateDirectories: true)
        try Data("keep me".utf8).write(to: inTheWay.appendingPathComponent("inside.txt"))
        let output = try await runProduct(
            "jobkit",
            arguments: ["download", "-o", fixture.output.path]
                + names.map { base.appendingPathComponent($0).absoluteString })
        #expect(output.status == 1, "\(output.stderr)")
        #expect(output.stderr.contains("error: \(names[1]) ("), "\(output.stderr)")
        #expect(
            FileManager.default.contents(atPath: inTheWay.appendingPathComponent("inside.txt").path)
                == Data("keep me".utf8))
        #expect(fixture.arrived(names[0]) && fixture.arrived(names[2]))
        _ = server
    }

    @Test func ctrlCStopsWithExitCode130AndARerunCompletes() async throws {
        let fixture = try DownloadFixture()
        defer { fixture.cleanUp() }
        let names = try fixture.make("f", count: 30) { 20_000 + $0 }
        let (server, base) = try await fixture.serve(["--latency", "100"])
        let list = try fixture.inputFile(names, base: base)
        let arguments = ["download", "-i", list.path, "-o", fixture.output.path, "-j", "1", "--json"]
        let first = try LaunchedProcess(arguments)
        #expect(await first.send(SIGINT) { first.stdout.contains(#""event":"completed""#) }, "\(first.stderr)")
        #expect(await first.wait() == 130, "\(first.stderr)")
        #expect(first.stderr.contains("interrupted: "), "\(first.stderr)")
        #expect(first.stdout.split(separator: "\n").last?.contains(#""interrupted":true"#) == true)
        let second = try await runProduct("jobkit", arguments: arguments)
        #expect(second.status == 0, "\(second.stderr)")
        #expect(names.allSatisfy(fixture.arrived))
        _ = server
    }

    @Test func aFolderInUseOrUnusableIsOneErrorLineAndExitCode1() async throws {
        let fixture = try DownloadFixture()
        defer { fixture.cleanUp() }
        let names = try fixture.make("f", count: 20) { 1000 + $0 }
        let (server, base) = try await fixture.serve(["--latency", "1000"])
        let urls = names.map { base.appendingPathComponent($0).absoluteString }
        let first = try LaunchedProcess(["download", "-o", fixture.output.path, "-j", "1"] + urls)
        #expect(await first.waitUntil { first.stdout.contains("started") }, "\(first.stderr)")
        let second = try await runProduct("jobkit", arguments: ["download", "-o", fixture.output.path] + urls)
        #expect(second.status == 1, "\(second.stderr)")
        #expect(second.stderr.hasPrefix("error: ") && second.stderr.contains("in use"), "\(second.stderr)")
        #expect(second.stderr.split(separator: "\n").count == 1)
        first.send(SIGINT)
        #expect(await first.wait() == 130, "\(first.stderr)")

        let file = fixture.folder.appendingPathComponent("a-file")
        try Data("x".utf8).write(to: file)
        let unusable = try await runProduct("jobkit", arguments: ["download", "-o", file.path, urls[0]])
        #expect(unusable.status == 1, "\(unusable.stderr)")
        #expect(unusable.stderr.hasPrefix("error: ") && unusable.stderr.contains(file.path), "\(unusable.stderr)")
        #expect(try Data(contentsOf: file) == Data("x".utf8), "the file in the way is left as it is")
        _ = server
    }

    @Test func aRerunOfCompleteFilesSaysNothingWasDownloadedAndSendsNoRequest() async throws {
        let fixture = try DownloadFixture()
        defer { fixture.cleanUp() }
        let names = try fixture.make("f", count: 2) { 1000 + $0 }
        let (server, base) = try await fixture.serve()
        let urls = names.map { base.appendingPathComponent($0).absoluteString }
        let first = try await runProduct("jobkit", arguments: ["download", "-o", fixture.output.path, urls[0]])
        #expect(first.status == 0, "\(first.stderr)")
        #expect(first.stdout.split(separator: "\n").last?.hasPrefix("downloaded 1 file (") == true, "\(first.stdout)")
        let requests = fixture.requests().count

        let again = try await runProduct("jobkit", arguments: ["download", "-o", fixture.output.path, urls[0]])
        #expect(again.status == 0, "\(again.stderr)")
        let summary = again.stdout.split(separator: "\n").last.map(String.init) ?? ""
        #expect(summary.hasPrefix("nothing downloaded: 1 file already complete ("), "\(again.stdout)")
        #expect(fixture.requests().count == requests, "no request for a complete file")

        let mixed = try await runProduct("jobkit", arguments: ["download", "-o", fixture.output.path] + urls)
        #expect(mixed.status == 0, "\(mixed.stderr)")
        let mixedSummary = mixed.stdout.split(separator: "\n").last.map(String.init) ?? ""
        #expect(
            mixedSummary.hasPrefix("downloaded 1 file (") && mixedSummary.hasSuffix("; 1 already complete"),
            "\(mixed.stdout)")
        #expect(names.allSatisfy(fixture.arrived))
        _ = server
    }

    /// A file that arrives before the command has looked at every item it added is this run's, not
    /// one "already complete" (the command judged that after adding the batch, and a busy machine
    /// let the first small files complete meanwhile). 64 one-byte files in one batch.
    @Test func aFirstRunCountsEveryFileAsDownloadedHoweverFastItArrives() async throws {
        let fixture = try DownloadFixture()
        defer { fixture.cleanUp() }
        let names = try fixture.make("tiny", count: 64) { _ in 1 }
        let (server, base) = try await fixture.serve()
        let list = try fixture.inputFile(names, base: base)

        let output = try await runProduct(
            "jobkit", arguments: ["download", "-j", "16", "-i", list.path, "-o", fixture.output.path])

        #expect(output.status == 0, "\(output.stderr)")
        let summary = output.stdout.split(separator: "\n").last.map(String.init) ?? ""
        #expect(summary.hasPrefix("downloaded 64 files (64 B)"), "\(summary)")
        #expect(!summary.contains("already complete"), "\(summary)")
        #expect(names.allSatisfy(fixture.arrived))
        _ = server
    }

    @Test func usageErrorsExit64AndNameTheLine() async throws {
        let fixture = try DownloadFixture()
        defer { fixture.cleanUp() }
        let list = fixture.folder.appendingPathComponent("list.txt")
        try Data("https://e.com/a\n  out=a\n# fine\n  bogus=1\n".utf8).write(to: list)
        let headers = fixture.folder.appendingPathComponent("headers.txt")
        let manyHeaders = (1...101).map { "  header=X-H\($0): v\n" }.joined()
        try Data("https://e.com/a\n\(manyHeaders)".utf8).write(to: headers)
        let checksum = fixture.folder.appendingPathComponent("checksum.txt")
        try Data("https://e.com/a\n  out=a\n  checksum=sha-256=abc\n".utf8).write(to: checksum)
        let duplicate = fixture.folder.appendingPathComponent("dup.txt")
        try Data("https://e.com/x/a.bin\nhttps://f.com/y/a.bin\n".utf8).write(to: duplicate)
        let cases: [([String], String)] = [
            ([], "give at least one URL"),
            (["-i", list.path], "\(list.path):4: unknown option 'bogus'"),
            (["-i", headers.path], "\(headers.path):102: header=: more than 100 headers for one URL"),
            (["-i", checksum.path], "\(checksum.path):3: "),
            (["-i", duplicate.path], "\(duplicate.path):1 and \(duplicate.path):2 both save to 'a.bin'"),
            (["-i", fixture.folder.appendingPathComponent("missing").path], "no such file"),
            (["ftp://e.com/a"], "URL 1: not an http:// or https:// URL"),
            (["-j", "0", "https://e.com/a"], "must be at least 1"),
            (["-j", "-1", "https://e.com/a"], "-j/--max-concurrent must be at least 1 and at most 256"),
            (["--max-concurrent", "-1", "https://e.com/a"], "it is -1"),
            (["--retry=-1", "https://e.com/a"], "--retry must be 0...100"),
            (["--retry", "-1", "https://e.com/a"], "--retry must be 0...100"),
            (["-x", "-1", "https://e.com/a"], "is not from 1 to 16"),
        ]
        for (arguments, message) in cases {
            let output = try await runProduct("jobkit", arguments: ["download", "-o", fixture.output.path] + arguments)
            #expect(output.status == 64, "\(arguments): \(output.stderr)")
            #expect(output.stderr.contains(message), "\(arguments): \(output.stderr)")
        }
        #expect(!FileManager.default.fileExists(atPath: fixture.output.path), "nothing was created")
    }
}
