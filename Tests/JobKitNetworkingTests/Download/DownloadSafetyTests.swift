import AsyncHTTPClient
import Foundation
import JobKit
import JobKitNetworking
import JobKitTestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

@Suite struct DownloadSafetyTests {
    @Test(arguments: TransportKind.allCases)
    func aDirectoryAsDestinationFailsBeforeAnyRequestAndIsLeftIntact(_ kind: TransportKind) async throws {
        let server = try ScriptedServer { _, _ in .respond(200, body: pattern(1000)) }
        defer { server.stop() }
        let folder = try scratchFolder()
        let destination = folder.appendingPathComponent("photos")
        try FileManager.default.createDirectory(at: destination, withIntermediateDirectories: true)
        try Data("precious".utf8).write(to: destination.appendingPathComponent("keep.jpg"))

        let result = await outcome(
            of: Job<URL>.download(from: server.url("file"), to: destination, transport: kind.transport))

        let error = try #require(result.failureError as? DownloadError)
        #expect(error.kind == .destinationIsDirectory)
        #expect(error.localizedDescription.contains("photos: it is a directory"))
        #expect(server.requests.isEmpty)
        let kept = try Data(contentsOf: destination.appendingPathComponent("keep.jpg"))
        #expect(kept == Data("precious".utf8))
    }

    /// A download that fails before its first byte (a 404, a connection closed unanswered) leaves nothing in
    /// the folder; one cut off after some bytes keeps them in its `.part`, with the validator to
    /// resume them.
    @Test(arguments: TransportKind.allCases)
    func aFailureBeforeTheFirstByteLeavesNoPartAndOneAfterItKeepsItsBytes(_ kind: TransportKind) async throws {
        let server = try ScriptedServer { request, _ in
            switch request.path {
            case "/missing": .respond(404, body: Data("not here".utf8))
            case "/closed": .raw(Data())
            default: .drop(headers: ["ETag": "\"v\""], body: pattern(10_000), sent: 3_000)
            }
        }
        defer { server.stop() }
        let folder = try scratchFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        func download(_ url: URL, _ name: String) async -> Result<URL, any Error> {
            await outcome(
                of: Job<URL>.download(from: url, to: folder.appendingPathComponent(name), transport: kind.transport))
        }

        let missing = await download(server.url("missing"), "missing")
        let closed = await download(server.url("closed"), "closed")
        let dropped = await download(server.url("dropped"), "dropped")

        #expect(missing.failureError is HTTPStatusError)
        #expect(closed.failureError is TransportError)
        #expect(dropped.failureError != nil)
        let names = try FileManager.default.contentsOfDirectory(atPath: folder.path).sorted()
        #expect(names == ["dropped.part", "dropped.part.meta"])
        #expect(try Data(contentsOf: folder.appendingPathComponent("dropped.part")) == pattern(10_000).prefix(3_000))
    }

    @Test(arguments: TransportKind.allCases)
    func aMissingFolderFailsBeforeAnyRequestWithAReadableError(_ kind: TransportKind) async throws {
        let server = try ScriptedServer { _, _ in .respond(200, body: pattern(1000)) }
        defer { server.stop() }
        let folder = try scratchFolder().appendingPathComponent("missing")

        let result = await outcome(
            of: Job<URL>.download(
                from: server.url("file"), to: folder.appendingPathComponent("file.bin"), transport: kind.transport))

        let error = try #require(result.failureError as? DownloadError)
        #expect(error.kind == .folderMissing)
        #expect(error.localizedDescription == "cannot download into \(folder.path): no such folder")
        #expect(server.requests.isEmpty)
    }

    @Test(.enabled(if: getuid() != 0, "root may write anywhere"), arguments: TransportKind.allCases)
    func aReadOnlyFolderFailsBeforeAnyRequest(_ kind: TransportKind) async throws {
        let server = try ScriptedServer { _, _ in .respond(200, body: pattern(1000)) }
        defer { server.stop() }
        let folder = try scratchFolder()
        try FileManager.default.setAttributes([.posixPermissions: 0o555], ofItemAtPath: folder.path)
        defer { try? FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: folder.path) }

        let result = await outcome(
            of: Job<URL>.download(
                from: server.url("file"), to: folder.appendingPathComponent("file.bin"), transport: kind.transport))

        #expect((result.failureError as? DownloadError)?.kind == .folderNotWritable)
        #expect(server.requests.isEmpty)
    }

    @Test(arguments: TransportKind.allCases)
    func aSecondDownloadToTheSameDestinationFailsAtOnce(_ kind: TransportKind) async throws {
        let release = Gate()
        let (arrivals, arrived) = AsyncStream.makeStream(of: Void.self)
        let bytes = pattern(10_000)
        let server = try ScriptedServer { _, _ in
            arrived.yield()
            return .waiting(for: release, then: .respond(200, body: bytes))
        }
        defer { server.stop() }
        let destination = try scratchFolder().appendingPathComponent("same.bin")
        let first = Task {
            try await Job<URL>.download(from: server.url("file"), to: destination, transport: kind.transport).value
        }
        for await _ in arrivals { break }

        let second = await outcome(
            of: Job<URL>.download(from: server.url("file"), to: destination, transport: kind.transport))

        let error = try #require(second.failureError as? DownloadError)
        #expect(error.kind == .destinationBusy)
        #expect(error.localizedDescription.contains("another download to it is running"))
        release.open()
        _ = try await first.value
        #expect(try Data(contentsOf: destination) == bytes)
        #expect(server.requests.count == 1)
    }

    @Test(arguments: TransportKind.allCases)
    func aPartOfAnEarlierVersionIsNotResumed(_ kind: TransportKind) async throws {
        // The file changed on the server since the `.part` was written: the server, honouring
        // `If-Range`, answers 200 with the new version, which replaces the stale prefix.
        let old = pattern(100_000, seed: 1)
        let new = pattern(100_000, seed: 2)
        let server = try ScriptedServer { request, _ in
            if request.headers["if-range"] == "\"v2\"", let start = request.rangeStart {
                return .respond(
                    206, headers: ["ETag": "\"v2\"", "Content-Range": "bytes \(start)-99999/100000"],
                    body: new.dropFirst(start))
            }
            return .respond(200, headers: ["ETag": "\"v2\""], body: new)
        }
        defer { server.stop() }
        let destination = try scratchFolder().appendingPathComponent("changed.bin")
        try leavePart(old.prefix(40_000), of: server.url("file"), at: destination, etag: "\"v1\"", total: 100_000)

        _ = try await Job<URL>.download(from: server.url("file"), to: destination, transport: kind.transport).value

        #expect(try Data(contentsOf: destination) == new)
        #expect(server.requests.first?.headers["if-range"] == "\"v1\"")
        #expect(server.requests.first?.headers["range"] == "bytes=40000-")
        #expect(!FileManager.default.fileExists(atPath: destination.path + ".part.meta"))
    }

    @Test(arguments: TransportKind.allCases)
    func aRangeThatDoesNotContinueThePartStartsOver(_ kind: TransportKind) async throws {
        // A server that ignores `If-Range` and answers a different range and total: the 206 is
        // refused and the download starts over from zero.
        let new = pattern(80_000, seed: 3)
        let server = try ScriptedServer { request, _ in
            if request.rangeStart != nil {
                return .respond(
                    206, headers: ["ETag": "\"v1\"", "Content-Range": "bytes 10-79999/80000"], body: new.dropFirst(10))
            }
            return .respond(200, headers: ["ETag": "\"v1\""], body: new)
        }
        defer { server.stop() }
        let destination = try scratchFolder().appendingPathComponent("lying.bin")
        try leavePart(Data(count: 30_000), of: server.url("file"), at: destination, etag: "\"v1\"", total: 100_000)

        _ = try await Job<URL>.download(from: server.url("file"), to: destination, transport: kind.transport).value

        #expect(try Data(contentsOf: destination) == new)
        #expect(server.requests.map(\.headers["range"]) == ["bytes=30000-", nil])
    }

    @Test(arguments: TransportKind.allCases)
    func aServerIgnoringIfRangeWithOnlyLastModifiedDoesNotSpliceVersions(_ kind: TransportKind) async throws {
        // The `.part` holds version 1, known by its Last-Modified date only. The server changed the
        // file, ignores `If-Range`, and answers the range of version 2: spliced, the file would be
        // neither version. The 206's Last-Modified differs, so the download starts over.
        let old = pattern(100_000, seed: 1)
        let new = pattern(100_000, seed: 2)
        let newDate = "Tue, 24 Nov 2026 10:00:00 GMT"
        let server = try ScriptedServer { request, _ in
            if let start = request.rangeStart {
                return .respond(
                    206, headers: ["Last-Modified": newDate, "Content-Range": "bytes \(start)-99999/100000"],
                    body: new.dropFirst(start))
            }
            return .respond(200, headers: ["Last-Modified": newDate], body: new)
        }
        defer { server.stop() }
        let destination = try scratchFolder().appendingPathComponent("dated.bin")
        let oldDate = "Mon, 23 Nov 2026 10:00:00 GMT"
        try leavePart(
            old.prefix(40_000), of: server.url("file"), at: destination, etag: nil, lastModified: oldDate,
            total: 100_000)

        _ = try await Job<URL>.download(from: server.url("file"), to: destination, transport: kind.transport).value

        #expect(try Data(contentsOf: destination) == new)
        #expect(server.requests.map(\.headers["if-range"]) == [oldDate, nil])
        #expect(server.requests.map(\.headers["range"]) == ["bytes=40000-", nil])
    }

    @Test(arguments: TransportKind.allCases)
    func aRangeWithoutTheValidatorThatWasSentStartsOver(_ kind: TransportKind) async throws {
        // The `.part` is known by an ETag; a 206 that carries none cannot show it is that version.
        let bytes = pattern(60_000, seed: 4)
        let server = try ScriptedServer { request, _ in
            if let start = request.rangeStart {
                return .respond(
                    206, headers: ["Content-Range": "bytes \(start)-59999/60000"], body: bytes.dropFirst(start))
            }
            return .respond(200, headers: ["ETag": "\"v9\""], body: bytes)
        }
        defer { server.stop() }
        let destination = try scratchFolder().appendingPathComponent("tagless.bin")
        try leavePart(Data(count: 20_000), of: server.url("file"), at: destination, etag: "\"v1\"", total: 60_000)

        _ = try await Job<URL>.download(from: server.url("file"), to: destination, transport: kind.transport).value

        #expect(try Data(contentsOf: destination) == bytes)
        #expect(server.requests.map(\.headers["range"]) == ["bytes=20000-", nil])
    }

    @Test(arguments: TransportKind.allCases)
    func aRangeWithTheSameLastModifiedResumes(_ kind: TransportKind) async throws {
        let bytes = pattern(60_000, seed: 5)
        let date = "Mon, 23 Nov 2026 10:00:00 GMT"
        let server = try ScriptedServer { request, _ in
            if let start = request.rangeStart, request.headers["if-range"] == date {
                return .respond(
                    206, headers: ["Last-Modified": date, "Content-Range": "bytes \(start)-59999/60000"],
                    body: bytes.dropFirst(start))
            }
            return .respond(200, headers: ["Last-Modified": date], body: bytes)
        }
        defer { server.stop() }
        let destination = try scratchFolder().appendingPathComponent("same-date.bin")
        try leavePart(
            bytes.prefix(25_000), of: server.url("file"), at: destination, etag: nil, lastModified: date, total: 60_000)

        _ = try await Job<URL>.download(from: server.url("file"), to: destination, transport: kind.transport).value

        #expect(try Data(contentsOf: destination) == bytes)
        #expect(server.requests.map(\.headers["range"]) == ["bytes=25000-"])
    }

    @Test(arguments: TransportKind.allCases)
    func aContentCodedBodyIsNotMeasuredAgainstItsEncodedLength(_ kind: TransportKind) async throws {
        // Downloads ask for the bytes as stored (`Accept-Encoding: identity`). A server that gzips
        // anyway announces the compressed length, while the transport hands over decoded bytes:
        // that is no error, and the `.part` keeps no validator (its bytes are not the server's ranges).
        let text = Data(String(repeating: "JobKit gzip body line\n", count: 200).utf8)
        let gzip = try #require(
            Data(
                base64Encoded:
                    "H4sIAAAAAAACA+3IsQ2AIBAAwN4pfh7YgmjIJ0YobGR6B+GuvDJazTf6yhltnF/c+VxHsdZaa6211lprrd12f8DLnckwEQAA"))
        let server = try ScriptedServer { _, _ in
            .respond(200, headers: ["Content-Encoding": "gzip", "ETag": "\"gz\""], body: gzip)
        }
        defer { server.stop() }
        let destination = try scratchFolder().appendingPathComponent("coded.txt")

        let result = await outcome(
            of: Job<URL>.download(from: server.url("file"), to: destination, transport: kind.transport))

        #expect(server.requests.first?.headers["accept-encoding"] == "identity")
        #expect(throws: Never.self) { try result.get() }
        let written = try Data(contentsOf: destination)
        // URLSession decodes it; AsyncHTTPClient (without decompression) writes it as sent.
        #expect(written == (kind == .urlSession ? text : gzip))
    }

    @Test(arguments: TransportKind.allCases)
    func aPartWithoutAValidatorStartsOverUnlessBlindResumeIsAsked(_ kind: TransportKind) async throws {
        let bytes = pattern(50_000)
        let server = try ScriptedServer { request, _ in
            if let start = request.rangeStart {
                return .respond(
                    206, headers: ["Content-Range": "bytes \(start)-49999/50000"], body: bytes.dropFirst(start))
            }
            return .respond(200, body: bytes)
        }
        defer { server.stop() }
        let folder = try scratchFolder()
        let careful = folder.appendingPathComponent("careful.bin")
        try bytes.prefix(20_000).write(to: careful.appendingPathExtension("part"))
        _ = try await Job<URL>.download(from: server.url("file"), to: careful, transport: kind.transport).value
        let blind = folder.appendingPathComponent("blind.bin")
        try bytes.prefix(20_000).write(to: blind.appendingPathExtension("part"))
        _ = try await Job<URL>.download(
            from: server.url("file"), to: blind, transport: kind.transport, blindResume: true
        ).value

        #expect(try Data(contentsOf: careful) == bytes)
        #expect(try Data(contentsOf: blind) == bytes)
        #expect(server.requests.map(\.headers["range"]) == [nil, "bytes=20000-"])
    }

    @Test(arguments: TransportKind.allCases)
    func aCompletePartAnswered416IsFinalized(_ kind: TransportKind) async throws {
        let bytes = pattern(64_000)
        let server = try ScriptedServer { _, _ in
            .respond(416, headers: ["Content-Range": "bytes */64000"])
        }
        defer { server.stop() }
        let destination = try scratchFolder().appendingPathComponent("complete.bin")
        try leavePart(bytes, of: server.url("file"), at: destination, etag: "\"e\"", total: 64_000)

        _ = try await Job<URL>.download(from: server.url("file"), to: destination, transport: kind.transport).value

        #expect(try Data(contentsOf: destination) == bytes)
        #expect(server.requests.count == 1)
        #expect(!FileManager.default.fileExists(atPath: destination.path + ".part"))
    }

    @Test(arguments: TransportKind.allCases)
    func aShortPartAnswered416StartsOver(_ kind: TransportKind) async throws {
        let bytes = pattern(64_000)
        let server = try ScriptedServer { request, _ in
            request.rangeStart != nil
                ? .respond(416, headers: ["Content-Range": "bytes */64000"])
                : .respond(200, headers: ["ETag": "\"e\""], body: bytes)
        }
        defer { server.stop() }
        let destination = try scratchFolder().appendingPathComponent("short.bin")
        try leavePart(bytes.prefix(1000), of: server.url("file"), at: destination, etag: "\"e\"", total: 70_000)

        _ = try await Job<URL>.download(from: server.url("file"), to: destination, transport: kind.transport).value

        #expect(try Data(contentsOf: destination) == bytes)
        #expect(server.requests.count == 2)
    }

    @Test(arguments: TransportKind.allCases)
    func aDroppedConnectionIsRetriedAndResumesWhereThePartEnds(_ kind: TransportKind) async throws {
        let bytes = pattern(200_000)
        let server = try ScriptedServer { request, index in
            if index == 0 { return .drop(headers: ["ETag": "\"a\""], body: bytes, sent: 70_000) }
            guard let start = request.rangeStart, request.headers["if-range"] == "\"a\"" else {
                return .respond(200, headers: ["ETag": "\"a\""], body: bytes)
            }
            return .respond(
                206, headers: ["ETag": "\"a\"", "Content-Range": "bytes \(start)-199999/200000"],
                body: bytes.dropFirst(start))
        }
        defer { server.stop() }
        let destination = try scratchFolder().appendingPathComponent("dropped.bin")
        let dropped = await outcome(
            of: Job<URL>.download(from: server.url("file"), to: destination, transport: kind.transport))
        let error = try #require(dropped.failureError)
        #expect(TransientFailure.isTransient(error), "\(error)")
        #expect(error.localizedDescription.contains(server.url("file").absoluteString))

        _ = try await Job<URL>.download(from: server.url("file"), to: destination, transport: kind.transport)
            .retryingTransientFailures(backoff: .none).value

        #expect(try Data(contentsOf: destination) == bytes)
        #expect(server.requests.count == 2)
        #expect(server.requests.last?.headers["range"] == "bytes=70000-")
    }

    @Test(arguments: TransportKind.allCases)
    func aDroppedConnectionFailsAndIsRetriedByRetryingTransientFailures(_ kind: TransportKind) async throws {
        let bytes = pattern(120_000)
        let server = try ScriptedServer { _, index in
            index == 0 ? .drop(body: bytes, sent: 1000) : .respond(200, body: bytes)
        }
        defer { server.stop() }
        let reply = try await Job<HTTPReply>.data(for: URLRequest(url: server.url("data")))
            .retryingTransientFailures(backoff: .none).value
        #expect(reply.body == bytes)
        #expect(server.requests.count == 2)
    }

    @Test(arguments: TransportKind.allCases)
    func cancellingADownloadAtAnyPointKeepsOnlyThePartAndReleasesTheDestination(_ kind: TransportKind) async throws {
        let release = Gate()
        let bytes = pattern(30_000)
        // Cancelled on the server's thread as the request arrives: a task woken by the arrival could
        // wait longer than the client's read timeout for a thread of the pool (every test at once on
        // two cores), and the download would then rightly fail with `readTimeout`.
        let cancelOnArrival = Locked<JobHandle?>(nil)
        let server = try ScriptedServer { _, index in
            if index == 0 {
                cancelOnArrival.withLock { $0 }?.cancel()
                return .waiting(for: release, then: .respond(200, body: bytes))
            }
            return .respond(200, body: bytes)
        }
        defer { server.stop() }
        let destination = try scratchFolder().appendingPathComponent("cancelled.bin")
        // Performed on a queue held until the handle is known to the server: the request cannot
        // arrive before.
        let starting = DispatchQueue(label: "starting")
        starting.suspend()
        let result = try await awaitCallbackOrThrow("the cancelled download's result") { done in
            let handle = Job<URL>.download(from: server.url("file"), to: destination, transport: kind.transport)
                .perform(on: starting, resultQueue: .global()) { done.resume(returning: $0) }
            cancelOnArrival.withLock { $0 = handle }
            starting.resume()
        }
        #expect((result.failureError as? JobError) == .cancelled, "\(result)")
        release.open()
        #expect(!FileManager.default.fileExists(atPath: destination.path))
        // Cancelling before the body even starts runs nothing at all. The body waits on a queue held
        // until the cancel: not `.main`, which the test runner's main thread serves meanwhile — it
        // could start the body before `cancel()`, and even finish the download when this thread
        // is held up (its file then rightly stays, and the download below fails with
        // `destinationExists`).
        let held = DispatchQueue(label: "early")
        held.suspend()
        let earlyResult = try await awaitCallbackOrThrow("the early-cancelled download's result") { done in
            let early = Job<URL>.download(from: server.url("file"), to: destination, transport: kind.transport)
                .perform(on: held, resultQueue: .global()) { done.resume(returning: $0) }
            early.cancel()
            held.resume()
        }
        #expect((earlyResult.failureError as? JobError) == .cancelled, "\(earlyResult)")
        await withCheckedContinuation { done in held.async { done.resume() } }  // its body's turn has passed
        // The destination is free again: the next download proceeds.
        _ = try await Job<URL>.download(from: server.url("file"), to: destination, transport: kind.transport).value
        #expect(try Data(contentsOf: destination) == bytes)
        #expect(server.requests.count == 2, "the cancelled early download asked nothing")
    }
}
