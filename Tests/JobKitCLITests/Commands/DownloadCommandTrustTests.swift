import Foundation
import JobKit
import JobKitTestSupport
import Testing

@testable import JobKitNetworking

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// `jobkit download`, run as a user runs it, in folders and against servers that cannot be trusted.
@Suite(.timeLimit(.minutes(10))) struct DownloadCommandTrustTests {
    /// Runs `jobkit download ARGUMENTS` to its end: the exit status and what it printed.
    private func download(_ arguments: [String]) async throws -> (status: Int32, output: String) {
        let process = try LaunchedProcess(["download"] + arguments)
        let status = await process.wait()
        return (status, process.output)
    }

    private func journal(in folder: URL) -> URL { folder.appendingPathComponent(".jobkit-downloads.journal") }

    @Test func aPlantedJournalWritesNothingOutsideTheFolder() async throws {
        let server = try ScriptedServer { _, _ in .respond(200, body: pattern(2000)) }
        defer { server.stop() }
        let root = try scratchFolder()
        let folder = root.appendingPathComponent("sub")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let escaped = root.appendingPathComponent("escaped")
        try Data("keep me".utf8).write(to: escaped)
        let url = server.url("file.bin").absoluteString
        let lines = [
            #"{"format":"jobkit-downloads","next":2,"version":1}"#,
            #"{"id":1,"name":"../escaped","op":"add","url":"\#(url)"}"#,
            #"{"id":1,"op":"finishing","size":0}"#,
            #"{"id":1,"op":"state","state":"pending"}"#,
        ]
        try Data((lines.joined(separator: "\n") + "\n").utf8).write(to: journal(in: folder))

        let (status, output) = try await download(["-o", folder.path, url])

        #expect(status == 0, "\(output)")
        #expect(try Data(contentsOf: escaped) == Data("keep me".utf8))
        #expect(try Data(contentsOf: folder.appendingPathComponent("file.bin")) == pattern(2000))
        #expect(output.contains("warning: ") && output.contains("line 2: item 1 was dropped"), "\(output)")
    }

    @Test func absurdLengthsFailTheirItemsWithoutACrash() async throws {
        let server = try ScriptedServer { request, _ in
            request.path == "/fine.bin"
                ? .respond(200, body: pattern(100))
                : .respond(200, headers: ["Content-Length": "5000000000000000000"], body: pattern(100))
        }
        defer { server.stop() }
        let folder = try scratchFolder()

        let (status, output) = try await download(
            [
                "-o", folder.path, server.url("a.iso").absoluteString, server.url("b.iso").absoluteString,
                server.url("fine.bin").absoluteString,
            ])

        #expect(status == 1, "exit 1, not a signal: \(output)")
        #expect(output.contains("error: 2 of 3 downloads failed"), "\(output)")
        #expect(output.contains("a.iso") && output.contains("b.iso") && output.contains("Content-Length"))
        #expect(exists(folder.appendingPathComponent("fine.bin")))
    }

    @Test func aFileCreatedWhileItsDownloadRunsIsNeverReplaced() async throws {
        let gate = Gate()
        let server = try ScriptedServer { _, _ in .stall(body: pattern(300_000), sent: 100_000, until: gate) }
        defer {
            gate.open()
            server.stop()
        }
        let folder = try scratchFolder()
        let process = try LaunchedProcess(
            ["download", "-o", folder.path, server.url("holiday.mov").absoluteString])
        await eventually("a third arrived") { fileSize(folder.appendingPathComponent("holiday.mov.part")) == 100_000 }
        try Data("mine\n".utf8).write(to: folder.appendingPathComponent("holiday.mov"))
        gate.open()

        #expect(await process.wait() == 1, "\(process.output)")
        #expect(try Data(contentsOf: folder.appendingPathComponent("holiday.mov")) == Data("mine\n".utf8))
        #expect(process.output.contains("appeared while the download ran); it is left as it is"), "\(process.output)")
    }

    @Test func aSecondRunAskingAnotherURLUnderTheSameNameFailsOnlyThatItemUnlessAllowedToOverwrite() async throws {
        let server = try ScriptedServer { request, _ in
            switch request.path {
            case "/v1/app.tgz": .respond(200, body: pattern(1000, seed: 1))
            case "/v2/app.tgz": .respond(200, body: pattern(1200, seed: 2))
            default: .respond(200, body: pattern(300, seed: 3))
            }
        }
        defer { server.stop() }
        let folder = try scratchFolder()
        let first = try await download(["-o", folder.path, server.url("v1/app.tgz").absoluteString])
        #expect(first.status == 0, "\(first.output)")

        let second = try await download(
            ["-o", folder.path, server.url("v2/app.tgz").absoluteString, server.url("other.bin").absoluteString])

        #expect(second.status == 1, "\(second.output)")
        #expect(second.output.contains("'app.tgz' is already taken") && second.output.contains("--allow-overwrite"))
        #expect(second.output.contains("1 of 2 downloads failed"), "\(second.output)")
        #expect(try Data(contentsOf: folder.appendingPathComponent("other.bin")) == pattern(300, seed: 3))
        #expect(try Data(contentsOf: folder.appendingPathComponent("app.tgz")) == pattern(1000, seed: 1))

        let third = try await download(
            ["-o", folder.path, "--allow-overwrite", server.url("v2/app.tgz").absoluteString])

        #expect(third.status == 0, "\(third.output)")
        #expect(try Data(contentsOf: folder.appendingPathComponent("app.tgz")) == pattern(1200, seed: 2))
    }

    @Test func anOverwriteThatFailsLeavesTheCompletedFileAndItsItem() async throws {
        let server = try ScriptedServer { request, _ in
            request.path == "/v1/app.tgz" ? .respond(200, body: pattern(1000, seed: 1)) : .respond(404)
        }
        defer { server.stop() }
        let folder = try scratchFolder()
        let v1 = server.url("v1/app.tgz").absoluteString
        #expect(try await download(["-o", folder.path, v1]).status == 0)

        let failed = try await download([
            "-o", folder.path, "--allow-overwrite", server.url("v2/app.tgz").absoluteString,
        ])

        #expect(failed.status == 1, "\(failed.output)")
        #expect(try Data(contentsOf: folder.appendingPathComponent("app.tgz")) == pattern(1000, seed: 1))
        // The journal still has the completed download of v1: asked again, it is not fetched again.
        let again = try await download(["-o", folder.path, v1])
        #expect(again.status == 0, "\(again.output)")
        #expect(server.requests.map(\.path) == ["/v1/app.tgz", "/v2/app.tgz"])
        #expect(try Data(contentsOf: folder.appendingPathComponent("app.tgz")) == pattern(1000, seed: 1))
    }

    @Test func anOverwriteOfACompletedFileSendsItsHeadersAndCountsAsADownload() async throws {
        let server = try ScriptedServer { request, _ in
            guard request.path == "/v2/app.tgz" else { return .respond(200, body: pattern(1000, seed: 1)) }
            return request.headers["authorization"] == "Bearer t"
                ? .respond(200, body: pattern(1200, seed: 2)) : .respond(401)
        }
        defer { server.stop() }
        let folder = try scratchFolder()
        #expect(try await download(["-o", folder.path, server.url("v1/app.tgz").absoluteString]).status == 0)
        let list = folder.appendingPathComponent("list.txt")
        try Data("\(server.url("v2/app.tgz").absoluteString)\n  header=Authorization: Bearer t\n".utf8).write(to: list)

        let replaced = try await download(["-o", folder.path, "--allow-overwrite", "-i", list.path])

        #expect(replaced.status == 0, "\(replaced.output)")
        #expect(!replaced.output.contains("already complete"), "\(replaced.output)")
        #expect(try Data(contentsOf: folder.appendingPathComponent("app.tgz")) == pattern(1200, seed: 2))
    }

    @Test func anEarlierRunsLeftoversNeitherRunNorHoldTheCommandUp() async throws {
        let server = try ScriptedServer { request, _ in
            request.path == "/slow.bin" ? .waiting(for: Gate(), then: .respond(200)) : .respond(200, body: pattern(50))
        }
        defer { server.stop() }
        let folder = try scratchFolder()
        let slow = server.url("slow.bin").absoluteString
        let lines = [
            #"{"format":"jobkit-downloads","next":2,"version":1}"#,
            #"{"id":1,"name":"slow.bin","op":"add","url":"\#(slow)"}"#,
        ]
        try Data((lines.joined(separator: "\n") + "\n").utf8).write(to: journal(in: folder))

        let (status, output) = try await download(["-o", folder.path, server.url("fast.bin").absoluteString])

        #expect(status == 0, "\(output)")
        #expect(server.requests.map(\.path) == ["/fast.bin"], "the leftover never ran")
        let text = try String(contentsOf: journal(in: folder), encoding: .utf8)
        #expect(text.contains("slow.bin") && !text.contains("suspended"), "kept, untouched: \(text)")
    }

    @Test func anItemTheJournalHoldsSuspendedRunsWhenTheCommandNamesIt() async throws {
        let server = try ScriptedServer { _, _ in .respond(200, body: pattern(80)) }
        defer { server.stop() }
        let folder = try scratchFolder()
        let url = server.url("h.bin").absoluteString
        let lines = [
            #"{"format":"jobkit-downloads","next":3,"version":1}"#,
            #"{"id":2,"name":"h.bin","op":"add","url":"\#(url)"}"#,
            #"{"id":2,"op":"state","state":"suspended"}"#,
        ]
        try Data((lines.joined(separator: "\n") + "\n").utf8).write(to: journal(in: folder))

        let (status, output) = try await download(["-o", folder.path, url])

        #expect(status == 0, "\(output)")
        #expect(try Data(contentsOf: folder.appendingPathComponent("h.bin")) == pattern(80))
    }

    @Test func aURLNameTooLongIsShortenedKeepingItsExtension() async throws {
        let server = try ScriptedServer { _, _ in .respond(200, body: pattern(64)) }
        defer { server.stop() }
        let folder = try scratchFolder()
        let long = String(repeating: "a", count: 300) + ".tar.gz"

        let (status, output) = try await download(["-o", folder.path, server.url(long).absoluteString])

        #expect(status == 0, "\(output)")
        let names = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { !$0.hasPrefix(".") }
        #expect(names.count == 1 && names[0].utf8.count == 255 && names[0].hasSuffix(".tar.gz"), "\(names)")
    }

    @Test func aBadOutNameIsAUsageErrorNamingItsLine() async throws {
        let folder = try scratchFolder()
        let list = folder.appendingPathComponent("list.txt")
        try Data("http://127.0.0.1:9/a\n  out=../../.bashrc\n".utf8).write(to: list)
        let (status, output) = try await download(["-o", folder.path, "-i", list.path])
        #expect(status == 64, "\(output)")
        #expect(output.contains("list.txt:2"), "\(output)")
    }

    @Test func theJournalIsPrivateAndPrintedURLsHideTheirPassword() async throws {
        let server = try ScriptedServer { _, _ in .respond(404) }
        defer { server.stop() }
        let folder = try scratchFolder()
        let url = "http://user:hunter2@127.0.0.1:\(server.port)/missing.bin"

        let (status, output) = try await download(["-o", folder.path, url])

        #expect(status == 1)
        #expect(!output.contains("hunter2") && output.contains("missing.bin"), "\(output)")
        var info = stat()
        #expect(stat(journal(in: folder).path, &info) == 0 && info.st_mode & 0o777 == 0o600)
    }
}

/// Issue 31, from outside: URLs and redirects that used to trap, credentials in a URL, a refused connection.
extension DownloadCommandTrustTests {
    @Test func aPortBeyond65535OrARedirectToOneFailsThatItemAloneWhileTheOthersArrive() async throws {
        let server = try ScriptedServer { request, _ in
            request.path == "/moved.bin"
                ? .respond(302, headers: ["Location": "http://127.0.0.1:70000/y"])
                : .respond(200, body: pattern(500))
        }
        defer { server.stop() }
        let folder = try scratchFolder()
        let list = folder.appendingPathComponent("list.txt")
        try Data("http://[::1]:99999/listed.bin\n".utf8).write(to: list)

        let (status, output) = try await download(
            [
                "-o", folder.path, "-i", list.path, "--content-disposition", "http://127.0.0.1:99999/x.bin",
                server.url("moved.bin").absoluteString, server.url("fine.bin").absoluteString,
            ])

        #expect(status == 1, "exit 1, not a signal: \(output)")
        #expect(output.contains("error: 3 of 4 downloads failed"), "\(output)")
        #expect(output.contains("x.bin") && output.contains("the port '99999' is not a number from 1 to 65535"))
        #expect(output.contains("listed.bin"), "\(output)")
        #expect(output.contains("the redirect to http://127.0.0.1:70000/y cannot be followed"), "\(output)")
        #expect(try Data(contentsOf: folder.appendingPathComponent("fine.bin")) == pattern(500))
    }

    @Test func credentialsInTheURLPassABasicAuthServerAndStayHidden() async throws {
        let basic = "Basic " + Data("alice:pw".utf8).base64EncodedString()
        let server = try ScriptedServer { request, _ in
            request.headers["authorization"] == basic ? .respond(200, body: pattern(700)) : .respond(401)
        }
        defer { server.stop() }
        let folder = try scratchFolder()

        let (status, output) = try await download(
            ["-o", folder.path, "http://alice:pw@127.0.0.1:\(server.port)/secret.bin"])

        #expect(status == 0, "\(output)")
        #expect(try Data(contentsOf: folder.appendingPathComponent("secret.bin")) == pattern(700))
        #expect(!output.contains(":pw@"), "\(output)")
    }

    @Test func aClosedPortFailsAtOnceInOneCleanLine() async throws {
        let closed = try ScriptedServer { _, _ in .respond(200) }
        closed.stop()
        let folder = try scratchFolder()

        let (status, output) = try await download([
            "-o", folder.path, "--retry", "0", closed.url("x.bin").absoluteString,
        ])

        #expect(status == 1, "\(output)")
        #expect(output.contains("the connection to 127.0.0.1:\(closed.port) was refused"), "\(output)")
        #expect(!output.contains("errno") && !output.contains("error set"), "\(output)")
    }
}

/// Issue 31, from outside: reruns with a refreshed URL, an added checksum, a changed server name.
extension DownloadCommandTrustTests {
    /// A server whose first answer stops after 2000 of the file's bytes, and that honours `Range`
    /// with `If-Range` on its ETag.
    private func flakyServer(_ body: Data) throws -> ScriptedServer {
        try ScriptedServer { request, index in
            var headers = ["ETag": "\"v1\""]
            if index == 0 { return .drop(headers: headers, body: body, sent: 2000) }
            if let start = request.rangeStart, request.headers["if-range"] == "\"v1\"" {
                headers["Content-Range"] = "bytes \(start)-\(body.count - 1)/\(body.count)"
                return .respond(206, headers: headers, body: body.dropFirst(start))
            }
            return .respond(200, headers: headers, body: body)
        }
    }

    @Test(arguments: [false, true])
    func aRerunWithARefreshedSignedURLResumesTheSameItem(allowOverwrite: Bool) async throws {
        let body = pattern(5000, seed: 9)
        let server = try flakyServer(body)
        defer { server.stop() }
        let folder = try scratchFolder()
        let signed = { (signature: String) in server.url("s.iso").absoluteString + "?X-Amz-Signature=" + signature }
        let first = try await download(["-o", folder.path, "--retry", "0", signed("AAAA")])
        #expect(first.status == 1, "\(first.output)")
        #expect(fileSize(folder.appendingPathComponent("s.iso.part")) == 2000)

        let second = try await download(
            ["-o", folder.path, "--retry", "0"] + (allowOverwrite ? ["--allow-overwrite"] : []) + [signed("BBBB")])

        #expect(second.status == 0, "\(second.output)")
        #expect(try Data(contentsOf: folder.appendingPathComponent("s.iso")) == body)
        #expect(server.requests.last?.headers["range"] == "bytes=2000-", "resumed, not from byte 0")
        #expect(server.requests.last?.path.hasSuffix("X-Amz-Signature=BBBB") == true)
        #expect(!second.output.contains("BBBB") && !second.output.contains("AAAA"), "\(second.output)")
    }

    @Test func aNameTakenByAURLThatPrintsTheSameSaysHowTheyDiffer() async throws {
        let server = try ScriptedServer { _, _ in .respond(200, body: pattern(300)) }
        defer { server.stop() }
        let folder = try scratchFolder()
        let url = { (user: String) in "http://\(user)@127.0.0.1:\(server.port)/app.tgz" }
        #expect(try await download(["-o", folder.path, url("alice:one")]).status == 0)

        let (status, output) = try await download(["-o", folder.path, url("bob:two")])

        #expect(status == 1, "\(output)")
        #expect(
            output.contains("its URL differs from this one in its hidden credentials or signature only"), "\(output)")
        #expect(!output.contains("one@") && !output.contains("two@"), "\(output)")
    }

    @Test func aCompletedItemIsNotTakenOverByAnotherQuery() async throws {
        // `?id=1` and `?id=2` are two files: a completed one is never asked again, so its name is taken.
        let server = try ScriptedServer { request, _ in
            .respond(200, headers: ["ETag": "\"\(request.path)\""], body: Data("content of \(request.path)".utf8))
        }
        defer { server.stop() }
        let folder = try scratchFolder()
        let url = { (id: Int) in server.url("get").absoluteString + "?id=\(id)" }
        #expect(try await download(["-o", folder.path, url(1)]).status == 0)

        let second = try await download(["-o", folder.path, url(2)])

        #expect(second.status == 1, "\(second.output)")
        #expect(second.output.contains("already taken"), "\(second.output)")
        #expect(try Data(contentsOf: folder.appendingPathComponent("get")) == Data("content of /get?id=1".utf8))
        let replaced = try await download(["-o", folder.path, "--allow-overwrite", url(2)])
        #expect(replaced.status == 0, "\(replaced.output)")
        #expect(try Data(contentsOf: folder.appendingPathComponent("get")) == Data("content of /get?id=2".utf8))
    }

    @Test func aChecksumAddedOnARerunVerifiesTheCompletedFile() async throws {
        let body = pattern(4000, seed: 4)
        let server = try ScriptedServer { _, _ in .respond(200, body: body) }
        defer { server.stop() }
        let folder = try scratchFolder()
        let url = server.url("data.bin").absoluteString
        #expect(try await download(["-o", folder.path, url]).status == 0)
        let list = folder.appendingPathComponent("list.txt")
        let hex = Checksum.sha256(of: body).hex
        try Data("\(url)\n  checksum=sha-256=\(hex)\n".utf8).write(to: list)

        let right = try await download(["-o", folder.path, "-i", list.path])
        #expect(right.status == 0, "\(right.output)")
        #expect(!right.output.contains("already taken"), "\(right.output)")

        var edited = body
        edited[100] ^= 0xFF  // the same size, edited in place
        try edited.write(to: folder.appendingPathComponent("data.bin"))
        let wrong = try await download(["-o", folder.path, "-i", list.path])
        #expect(wrong.status == 1, "\(wrong.output)")
        #expect(wrong.output.contains("does not match its checksum"), "\(wrong.output)")
        #expect(try Data(contentsOf: folder.appendingPathComponent("data.bin")) == edited, "the user's file stays")
    }

    @Test func aServerThatRenamesTheFileLeavesNoOrphanedPartBehind() async throws {
        let body = pattern(5000, seed: 6)
        let renamed = LockedBox<Bool>.make(false)
        let downloads = LockedBox<Int>.make(0)
        let server = try ScriptedServer { request, _ in
            let name = renamed.withLock { $0 } ? "new.bin" : "old.bin"
            var headers = ["ETag": "\"v1\"", "Content-Disposition": "attachment; filename=\"\(name)\""]
            if request.headers["range"] == "bytes=0-0" {  // the --content-disposition probe
                headers["Content-Range"] = "bytes 0-0/\(body.count)"
                return .respond(206, headers: headers, body: body.prefix(1))
            }
            let first = downloads.withLock { count in
                count += 1
                return count == 1
            }
            return first ? .drop(headers: headers, body: body, sent: 2000) : .respond(200, headers: headers, body: body)
        }
        defer { server.stop() }
        let folder = try scratchFolder()
        let url = server.url("get?id=7").absoluteString
        let first = try await download(["-o", folder.path, "--retry", "0", "--content-disposition", url])
        #expect(first.status == 1, "\(first.output)")
        #expect(exists(folder.appendingPathComponent("old.bin.part")), "\(first.output)")
        renamed.withLock { $0 = true }

        let second = try await download(["-o", folder.path, "--retry", "0", "--content-disposition", url])

        #expect(second.status == 0, "\(second.output)")
        #expect(try Data(contentsOf: folder.appendingPathComponent("new.bin")) == body)
        #expect(!exists(folder.appendingPathComponent("old.bin.part")))
        let manager = try DownloadManager(directory: folder)
        defer { manager.close() }
        #expect(manager.items.map(\.name) == ["new.bin"], "no item of the old name is left in the journal")
    }
}
