import Foundation
import JobKit
import JobKitNetworking
import JobKitTestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

@Suite struct HostileServerTests {
    @Test func aHugeResponseHeaderNeverTraps() async throws {
        let padding = String(repeating: "x", count: 100_000)
        let server = try ScriptedServer { _, _ in .respond(200, headers: ["X-Padding": padding], body: pattern(10)) }
        defer { server.stop() }
        let destination = try scratchFolder().appendingPathComponent("padded.bin")
        let result = await outcome(of: Job<URL>.download(from: server.url("file"), to: destination))
        switch result {
        case .success: #expect(try Data(contentsOf: destination) == pattern(10))
        case .failure(let error): #expect(!error.localizedDescription.isEmpty)
        }
    }

    @Test func garbageContentRangesNeverTrapAndNeverCorrupt() async throws {
        let bytes = pattern(20_000)
        let ranges = ["bytes abc", "bytes 5-1/20000", "bytes -1-5/20000", "bytes 99999999999999999999-1/2", "", "*/*"]
        for range in ranges {
            let server = try ScriptedServer { request, _ in
                request.rangeStart != nil
                    ? .respond(206, headers: ["ETag": "\"g\"", "Content-Range": range], body: bytes.dropFirst(5000))
                    : .respond(200, headers: ["ETag": "\"g\""], body: bytes)
            }
            defer { server.stop() }
            let destination = try scratchFolder().appendingPathComponent("garbage.bin")
            try leavePart(bytes.prefix(5000), of: server.url("file"), at: destination, etag: "\"g\"", total: 20_000)
            _ = try await Job<URL>.download(from: server.url("file"), to: destination).value
            #expect(try Data(contentsOf: destination) == bytes, "Content-Range: \(range)")
        }
    }

    @Test func aSymlinkedPartIsNeverFollowed() async throws {
        let server = try ScriptedServer { _, _ in .respond(200, body: pattern(100)) }
        defer { server.stop() }
        let folder = try scratchFolder()
        let victim = folder.appendingPathComponent("victim.txt")
        try Data("do not touch".utf8).write(to: victim)
        let destination = folder.appendingPathComponent("file.bin")
        try FileManager.default.createSymbolicLink(
            at: destination.appendingPathExtension("part"), withDestinationURL: victim)

        let result = await outcome(of: Job<URL>.download(from: server.url("file"), to: destination))

        #expect(result.failureError?.localizedDescription.hasPrefix("cannot write \(destination.path).part") == true)
        #expect(try Data(contentsOf: victim) == Data("do not touch".utf8))
        #expect(server.requests.isEmpty)
    }

    @Test func cancellingBeforeTheStartOrMidBodyLeavesNoFileAndFreesTheDestination() async throws {
        // The server holds each first download before its last bytes until the round has cancelled
        // it. (Cancelling at the very moment a task ends can trap inside FoundationNetworking itself;
        // see `RunningTransfer.cancel`.)
        let bytes = pattern(300_000)
        let releases = LockedBox<[String: Gate]>.make([:])
        @Sendable func gate(_ path: String) -> Gate {
            releases.withLock { gates -> Gate in
                let gate = gates[path, default: Gate()]
                gates[path] = gate
                return gate
            }
        }
        let server = try ScriptedServer { request, _ in
            guard request.path.hasPrefix("/hold/") else { return .respond(200, body: bytes) }
            return .stall(body: bytes, sent: 200_000, until: gate(request.path))
        }
        defer { server.stop() }
        let folder = try scratchFolder()
        for round in 0..<20 {
            let destination = folder.appendingPathComponent("cancel-\(round).bin")
            let (results, sink) = AsyncStream.makeStream(of: Result<URL, any Error>.self)
            let queue = DispatchQueue(label: "round \(round)")
            let beforeTheStart = round.isMultiple(of: 2)
            if beforeTheStart { queue.suspend() }
            let handle = Job<URL>.download(from: server.url("hold/\(round)"), to: destination)
                .perform(on: queue, resultQueue: .global()) { sink.yield($0) }
            if !beforeTheStart {
                // Mid-body: the first bytes are on disk.
                for await state in handle.states {
                    if case .running(let fraction) = state, fraction > 0 { break }
                }
            }
            handle.cancel()
            if beforeTheStart { queue.resume() }
            var iterator = results.makeAsyncIterator()
            let result = await iterator.next()
            #expect((result?.failureError as? JobError) == .cancelled, "round \(round)")
            #expect(!FileManager.default.fileExists(atPath: destination.path), "round \(round)")
            gate("/hold/\(round)").open()
            // The destination is free as soon as `cancel()` has returned.
            _ = try await Job<URL>.download(from: server.url("file"), to: destination).value
            #expect(try Data(contentsOf: destination) == bytes)
        }
        #expect(server.requests.count == 30, "the downloads cancelled before their start never asked")
    }

    @Test func aNoContentAnswerMakesAnEmptyFile() async throws {
        let server = try ScriptedServer { _, _ in .respond(204) }
        defer { server.stop() }
        let destination = try scratchFolder().appendingPathComponent("empty.bin")
        _ = try await Job<URL>.download(from: server.url("nothing"), to: destination).value
        #expect(try Data(contentsOf: destination).isEmpty)
    }

    @Test func aURLWithoutAnHTTPAnswerLeavesNoFile() async throws {
        let destination = try scratchFolder().appendingPathComponent("data.bin")
        let result = await outcome(
            of: Job<URL>.download(from: URL(string: "data:text/plain;base64,aGVsbG8=")!, to: destination))
        #expect(result.failureError != nil)
        #expect(!FileManager.default.fileExists(atPath: destination.path))
    }

    @Test func aMissingUploadFileFailsBeforeSending() async throws {
        let server = try ScriptedServer { _, _ in .respond(201) }
        defer { server.stop() }
        let missing = try scratchFolder().appendingPathComponent("nothing.bin")
        let result = await outcome(of: Job<HTTPReply>.upload(file: missing, to: server.url("upload")))
        #expect(result.failureError?.localizedDescription == "cannot read \(missing.path): no such readable file")
        #expect(server.requests.isEmpty)
    }

    @Test func aStalledServerTimesOutWithATransientError() async throws {
        let never = Gate()
        let server = try ScriptedServer { _, _ in .waiting(for: never, then: .respond(200)) }
        defer {
            never.open()
            server.stop()
        }
        let configuration = URLSessionConfiguration.ephemeral
        configuration.timeoutIntervalForRequest = 0.3
        let client = TransferClient(configuration: configuration)
        let result = await outcome(of: Job<HTTPReply>.data(for: URLRequest(url: server.url("stall")), client: client))
        let error = try #require(result.failureError as? TransportError)
        #expect(error.code == .timedOut)
        #expect(TransientFailure.isTransient(error))
    }
}
