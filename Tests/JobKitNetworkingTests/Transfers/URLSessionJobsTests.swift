import Foundation
import JobKit
import JobKitNetworking
import JobKitServer
import JobKitTestSupport
import JobKitTesting
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

@Suite struct URLSessionJobsTests {
    @Test func downloadsAreByteExactWithProgressReachingOne() async throws {
        try await withFixture { fixture in
            let bytes = try fixture.makeFile("big.bin", count: 3_000_000)
            let destination = fixture.root.appendingPathComponent("big.copy")
            let job = Job<URL>.download(from: fixture.url("files/big.bin"), to: destination)
            let (url, fraction): (URL, Double) = try await awaitCallbackOrThrow("the download's handler") {
                continuation in
                let handleBox = HandleBox()
                handleBox.handle = job.perform(resultQueue: .global()) { result in
                    continuation.resume(returning: result.map { ($0, handleBox.handle!.progress.fractionCompleted) })
                }
            }.get()
            #expect(url == destination)
            let downloaded = try Data(contentsOf: destination)
            #expect(downloaded == bytes)
            #expect(fraction == 1.0)
            #expect(!FileManager.default.fileExists(atPath: destination.path + ".part"))
        }
    }

    @Test func downloadProgressIsReportedLiveAndNeverGoesBack() async throws {
        try await withFixture { fixture in
            let data = Data(count: 256 * 1024)
            _ = try await Job<HTTPReply>.upload(data: data, to: fixture.url("media/slow.bin")).value
            let destination = fixture.root.appendingPathComponent("slow.copy")
            let job = Job<URL>.download(from: fixture.url("downloads/slow.bin?chunk-ms=20"), to: destination)
            let handle = job.perform(resultQueue: .global()) { _ in }
            var fractions: [Double] = []
            for await state in handle.states {
                if case .running(let fraction) = state { fractions.append(fraction) }
            }
            #expect(handle.state == .finished)
            #expect(fractions.contains { $0 > 0 && $0 < 1 }, "progress while the bytes arrive: \(fractions)")
            #expect(fractions == fractions.sorted())
            let downloaded = try Data(contentsOf: destination)
            #expect(downloaded == data)
        }
    }

    @Test func cancellingMidDownloadLeavesNoFinalFile() async throws {
        try await withFixture(FaultPlan(latencyMilliseconds: 300...300)) { fixture in
            _ = try fixture.makeFile("slow.bin", count: 100_000)
            let destination = fixture.root.appendingPathComponent("slow.copy")
            let download = Job<URL>.download(from: fixture.url("files/slow.bin"), to: destination)
            let (results, sink) = AsyncStream.makeStream(of: Result<URL, any Error>.self)
            let run = download.perform(resultQueue: .global()) { sink.yield($0) }
            // The server holds the response for 300 ms: cancel once the request is in flight.
            for await state in run.states where state != .pending { break }
            run.cancel()
            var iterator = results.makeAsyncIterator()
            let result = await iterator.next()
            #expect((result?.failureError as? JobError) == .cancelled)
            #expect(!FileManager.default.fileExists(atPath: destination.path))
        }
    }

    @Test func aPartWithoutMetadataIsDownloadedAfreshByteExact() async throws {
        try await withFixture { fixture in
            let bytes = try fixture.makeFile("resume.bin", count: 200_000)
            let destination = fixture.root.appendingPathComponent("resume.copy")
            try bytes.prefix(50_000).write(to: destination.appendingPathExtension("part"))
            _ = try await Job<URL>.download(from: fixture.url("files/resume.bin"), to: destination).value
            let downloaded = try Data(contentsOf: destination)
            #expect(downloaded == bytes)
        }
    }

    @Test func uploadsArriveByteExact() async throws {
        try await withFixture { fixture in
            let data = Data((0..<500_000).map { UInt8(truncatingIfNeeded: $0) })
            let response = try await Job<HTTPReply>.upload(data: data, to: fixture.url("media/upload.bin")).value
            let stored = try Data(contentsOf: fixture.root.appendingPathComponent("media/upload.bin"))
            #expect(response.status == 201)
            #expect(stored == data)
            let file = fixture.root.appendingPathComponent("local.bin")
            try data.prefix(1234).write(to: file)
            _ = try await Job<HTTPReply>.upload(file: file, to: fixture.url("media/from-file.bin")).value
            let storedFile = try Data(contentsOf: fixture.root.appendingPathComponent("media/from-file.bin"))
            #expect(storedFile == data.prefix(1234))
        }
    }

    @Test func statusErrorsAreTyped() async throws {
        try await withFixture { fixture in
            let result = await Task {
                try await Job<HTTPReply>.data(for: URLRequest(url: fixture.url("products/0"))).value
            }
            .result
            let error = try #require(result.failureError as? HTTPStatusError)
            #expect(error.status == 404)
            #expect(error.bodyExcerpt.contains("no such product"))
            #expect(error.headers["content-type"] == "application/json")
        }
    }

    @Test func decodeErrorsNameTheFieldThatFailed() async throws {
        struct WrongFeed: Decodable {
            struct Feed: Decodable { let results: [Entry] }
            struct Entry: Decodable { let artistName: Int }
            let feed: Feed
        }
        try await withFixture { fixture in
            let feed = try await Job<MusicFeed>.decode(for: URLRequest(url: fixture.url("feed?limit=2"))).value
            #expect(feed.feed.results.count == 2)
            let result = await Task { try await Job<WrongFeed>.decode(for: URLRequest(url: fixture.url("feed"))).value }
                .result
            let failure = try #require(result.failureError as? BodyDecodingError)
            #expect(failure.path == "feed.results[0].artistName")
        }
    }

    @Test func retriesHonourRetryAfterFromTheServer() async throws {
        try await withFixture { fixture in
            fixture.server.faults.failNext(2, status: 503, retryAfterSeconds: 3)
            let scheduler = TestScheduler()
            let job = Job<HTTPReply>.data(for: URLRequest(url: fixture.url("products/1")))
                .retryingTransientFailures(attempts: 3, backoff: .constant(.milliseconds(10)), scheduler: scheduler)
            let waiter = Task { try await job.value }
            for _ in 0..<2 {
                await scheduler.waitUntilScheduled()
                #expect(scheduler.scheduledDelays == [.seconds(3)], "Retry-After wins over the 10 ms backoff")
                scheduler.advance(by: .seconds(3))
            }
            let status = try await waiter.value.status
            #expect(status == 200)
            #expect(scheduler.now == .seconds(6))
        }
    }

    @Test func nonTransientFailuresAreNotRetried() async throws {
        #expect(TransientFailure.isTransient(URLError(.timedOut)))
        #expect(!TransientFailure.isTransient(URLError(.badURL)))
        #expect(TransientFailure.isTransient(URLError(.networkConnectionLost)))
        #expect(!TransientFailure.isTransient(CancellationError()))
    }
}

/// Lets a handler read the handle of its own run.
final class HandleBox: @unchecked Sendable {
    // Safety: written once, before the handler that reads it can run (the run waits on the network).
    var handle: JobHandle?
}
