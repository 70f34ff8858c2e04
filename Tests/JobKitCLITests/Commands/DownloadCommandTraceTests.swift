import Foundation
import JobKitTestSupport
import Testing

/// `jobkit download --trace FILE` and `--log-level LEVEL`, run as a user runs them.
@Suite(.timeLimit(.minutes(10))) struct DownloadCommandTraceTests {
    @Test func traceWritesAChromeTraceAndLogLevelLogsOnStandardErrorLeavingTheOutputAsItIs() async throws {
        let fixture = try DownloadFixture()
        defer { fixture.cleanUp() }
        let files = try fixture.make("file", count: 2) { 1000 + $0 }
        let (server, base) = try await fixture.serve()
        let urls = files.map { base.appendingPathComponent($0).absoluteString }
        let trace = fixture.folder.appendingPathComponent("downloads.json")

        let output = try await runProduct(
            "jobkit",
            arguments: ["download", "-o", fixture.output.path, "--trace", trace.path, "--log-level", "debug"] + urls)
        #expect(output.status == 0, "\(output.stderr)")
        #expect(files.allSatisfy(fixture.arrived))
        let lines = output.stdout.split(separator: "\n")
        #expect(lines.last == "trace written to \(trace.path)")
        #expect(lines.dropLast().last?.hasPrefix("downloaded 2 files (") == true, "the summary as without --trace")

        let json = try JSONSerialization.jsonObject(with: Data(contentsOf: trace)) as? [String: Any]
        let names = Set(((json?["traceEvents"] as? [[String: Any]]) ?? []).compactMap { $0["name"] as? String })
        #expect(files.allSatisfy { names.contains("download \($0)") }, "\(names)")

        for name in files {
            #expect(output.stderr.contains("download completed") && output.stderr.contains("download.name=\(name)"))
        }
        #expect(output.stderr.contains("debug"), "\(output.stderr)")

        // Without --log-level nothing is logged; without --trace no trace line.
        let quiet = try await runProduct("jobkit", arguments: ["download", "-o", fixture.output.path] + urls)
        #expect(quiet.status == 0 && quiet.stderr.isEmpty, "\(quiet.stderr)")
        #expect(!quiet.stdout.contains("trace written"))
        _ = server
    }

    @Test func aTraceOntoTheDownloadFolderItsFilesOrItsJournalIsAUsageErrorThatLeavesThemIntact() async throws {
        let fixture = try DownloadFixture()
        defer { fixture.cleanUp() }
        let files = try fixture.make("file", count: 2) { 1000 + $0 }
        let (server, base) = try await fixture.serve()
        let urls = files.map { base.appendingPathComponent($0).absoluteString }
        let out = fixture.output.path
        let first = try await runProduct("jobkit", arguments: ["download", "-o", out, urls[0]])
        #expect(first.status == 0, "\(first.stderr)")
        let manager = FileManager.default
        try manager.createDirectory(atPath: out + "/sub", withIntermediateDirectories: true)
        let link = fixture.folder.appendingPathComponent("link").path
        try manager.createSymbolicLink(atPath: link, withDestinationPath: out)
        let journal = out + "/.jobkit-downloads.journal"
        func snapshot() -> [String: Data] {
            var files: [String: Data] = [:]
            for name in (try? manager.contentsOfDirectory(atPath: out)) ?? [] {
                files[name] = manager.contents(atPath: out + "/" + name)
            }
            return files
        }
        let before = snapshot()
        #expect(before[files[0]] != nil && before[".jobkit-downloads.journal"] != nil)

        // This run's file, the earlier run's file (held by the journal only), the journal, a partial download's
        // name, the folder itself, and the same through `.`, `..` and a symbolic link.
        let refused = [
            out + "/" + files[1], out + "/" + files[0], journal, out + "/" + files[1] + ".part.meta", out,
            out + "/./" + files[1], out + "/sub/../" + files[1], out + "/missing/../.jobkit-downloads.journal",
            link + "/" + files[1], link + "/.jobkit-downloads.journal", link, out + "/",
        ]
        for trace in refused {
            let output = try await runProduct("jobkit", arguments: ["download", "-o", out, "--trace", trace] + urls)
            #expect(output.status == 64, "\(trace): \(output.stderr)")
            #expect(output.stderr.hasPrefix("error: --trace '\(trace)' would replace "), "\(trace): \(output.stderr)")
            #expect(output.stderr.split(separator: "\n").count == 1, "\(output.stderr)")
            #expect(snapshot() == before, "\(trace): the folder's files are as they were")
        }

        // A name the downloads do not use, in the folder or beside it: written.
        for trace in [out + "/trace.json", fixture.folder.appendingPathComponent("trace.json").path] {
            let output = try await runProduct("jobkit", arguments: ["download", "-o", out, "--trace", trace] + urls)
            #expect(output.status == 0, "\(trace): \(output.stderr)")
            #expect(output.stdout.contains("trace written to \(trace)"), "\(output.stdout)")
        }
        #expect(files.allSatisfy(fixture.arrived))
        _ = server
    }

    @Test func aTraceNeverReplacesAnEarlierRunsFileASubfoldersFileOrAHardLinkToOne() async throws {
        let fixture = try DownloadFixture()
        defer { fixture.cleanUp() }
        let files = try fixture.make("file", count: 3) { 1000 + $0 }
        let (server, base) = try await fixture.serve()
        let urls = files.map { base.appendingPathComponent($0).absoluteString }
        let out = fixture.output.path
        let list = fixture.folder.appendingPathComponent("list.txt")
        try Data("\(urls[0])\n\(urls[1])\n  dir=sub\n".utf8).write(to: list)
        let first = try await runProduct("jobkit", arguments: ["download", "-o", out, "-i", list.path])
        #expect(first.status == 0, "\(first.stderr)")
        let hardLink = fixture.folder.appendingPathComponent("hard").path
        try FileManager.default.linkItem(atPath: out + "/" + files[0], toPath: hardLink)
        let before = [
            try Data(contentsOf: URL(fileURLWithPath: out + "/" + files[0])),
            try Data(contentsOf: URL(fileURLWithPath: out + "/sub/" + files[1])),
        ]

        // An earlier run's file (this command names another), a subfolder's file this command does not name,
        // and a hard link to a file of the folder.
        for trace in [out + "/" + files[0], out + "/sub/" + files[1], hardLink] {
            let output = try await runProduct("jobkit", arguments: ["download", "-o", out, "--trace", trace, urls[2]])
            #expect(output.status == 64, "\(trace): \(output.stderr)")
            #expect(output.stderr.contains("would replace"), "\(trace): \(output.stderr)")
            #expect(!output.stdout.contains("trace written"), "\(trace): \(output.stdout)")
            #expect(try Data(contentsOf: URL(fileURLWithPath: out + "/" + files[0])) == before[0], "\(trace)")
            #expect(try Data(contentsOf: URL(fileURLWithPath: out + "/sub/" + files[1])) == before[1], "\(trace)")
        }
        _ = server
    }

    @Test func noSignatureTokenOrPasswordAppearsInAnyOutputEvenAtLogLevelTrace() async throws {
        let secrets = ["PWSECRET0", "TOKSECRET1", "SIGSECRET2", "TOKSECRET3", "TOKSECRET4", "SIGSECRET5", "BEARER6"]
        let body = Data(repeating: 7, count: 5000)
        let server = try ScriptedServer { request, _ in
            if request.path.hasPrefix("/a.bin") {
                return .respond(302, headers: ["Location": "/b.bin?X-Amz-Signature=SIGSECRET2&token=TOKSECRET3"])
            }
            if request.path.hasPrefix("/b.bin") { return .respond(200, body: body) }
            return .respond(404)
        }
        defer { server.stop() }
        let folder = try scratchFolder()
        let list = folder.appendingPathComponent("list.txt")
        let missing = server.url("missing.bin?access_token=TOKSECRET4&sig=SIGSECRET5").absoluteString
        try Data("\(missing)\n  header=Authorization: Bearer BEARER6\n".utf8).write(to: list)
        let signed = "http://alice:PWSECRET0@127.0.0.1:\(server.port)/a.bin?access_token=TOKSECRET1"
        for format in [[], ["--json"]] {
            let output = try await runProduct(
                "jobkit",
                arguments: [
                    "download", "-o", folder.appendingPathComponent("out").path, "--log-level", "trace",
                    "--retry", "0", "-i", list.path, signed,
                ] + format)
            #expect(output.status == 1, "\(output.stderr)")
            let all = output.stdout + output.stderr
            #expect(all.contains("a.bin") && all.contains("missing.bin") && all.contains("REDACTED"), "\(all)")
            #expect(all.contains("trace"), "trace lines are logged")
            for secret in secrets {
                #expect(
                    !all.contains(secret), "\(secret) in: \(all.split(separator: "\n").filter { $0.contains(secret) })")
            }
        }
    }
}
