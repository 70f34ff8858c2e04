import Foundation
import InMemoryTracing
import JobKit
import JobKitTestSupport
import JobKitTracing
import Testing
import Tracing

@testable import JobKitNetworking

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

@Suite struct RequestSpanTests {
    private func attribute(_ span: FinishedInMemorySpan, _ name: String) -> SpanAttribute? {
        span.attributes.get(name)
    }

    private func start(_ span: FinishedInMemorySpan) -> UInt64 { span.startInstant.nanosecondsSinceEpoch }

    @Test(arguments: TransportKind.allCases)
    func aRetriedDownloadExportsAsNestedSpansWithTheAttemptsErrorsAndRequests(_ kind: TransportKind) async throws {
        try await withFixture { fixture in
            let data = try fixture.makeFile("a.bin", count: 4096)
            let destination = fixture.root.appendingPathComponent("a.bin")
            fixture.server.faults.failNext(2, status: 503, method: "GET", path: "/files/a.bin")
            let tracer = InMemoryTracer()
            let job = Job<URL>.download(from: fixture.url("/files/a.bin"), to: destination, transport: kind.transport)
                .named("download a.bin").retry(3).named("retrying a.bin")
            let file = try await outcome(of: job.traced(by: SpanTracer(tracer: tracer))).get()
            #expect(try Data(contentsOf: file) == data)

            await eventually("every span ended") { tracer.finishedSpans.count == 7 }
            let spans = tracer.finishedSpans
            #expect(tracer.activeSpans.isEmpty)
            #expect(Set(spans.map(\.traceID)).count == 1, "one trace")
            let retry = try #require(spans.first { $0.operationName == "retrying a.bin" })
            #expect(retry.parentSpanID == nil)
            let attempts = spans.filter { $0.operationName == "download a.bin" }.sorted { start($0) < start($1) }
            #expect(attempts.count == 3)
            #expect(attempts.allSatisfy { $0.parentSpanID == retry.spanID })
            #expect(attempts.map { attribute($0, "jobkit.attempt") } == [.int64(1), .int64(2), .int64(3)])
            #expect(
                attempts.map { $0.errors.map { ($0.error as? HTTPStatusError)?.status } } == [[503], [503], []])
            #expect(attempts.map { $0.status?.code } == [.error, .error, nil])

            // Each attempt's request is a client span under the attempt's span.
            let requests = spans.filter { $0.operationName == "GET" }.sorted { start($0) < start($1) }
            #expect(requests.count == 3)
            #expect(requests.map(\.parentSpanID) == attempts.map(\.spanID))
            #expect(requests.allSatisfy { $0.kind == .client })
            #expect(
                requests.map { attribute($0, "http.response.status_code") } == [.int64(503), .int64(503), .int64(200)])
            #expect(requests.map { $0.status?.code } == [.error, .error, nil])
            #expect(
                requests.allSatisfy { attribute($0, "url.full") == .string(fixture.url("/files/a.bin").absoluteString) }
            )
            #expect(requests.allSatisfy { attribute($0, "http.request.method") == .string("GET") })
            // Each request carried its span's context to the server.
            let injected = tracer.performedContextInjections.compactMap { $0.values[InMemoryTracer.spanIDKey] }
            #expect(injected == requests.map(\.spanID))
        }
    }

    @Test func aManagersTracersTraceItsDownloadsAndTheirRequests() async throws {
        try await withFixture { fixture in
            _ = try fixture.makeFile("m.bin", count: 1024)
            fixture.server.faults.failNext(1, status: 503, method: "GET", path: "/files/m.bin")
            let tracer = InMemoryTracer()
            let log = UpdateLog()
            var configuration = testConfiguration(log, retry: .init(attempts: 2, backoff: .none))
            configuration.tracers = [SpanTracer(tracer: tracer)]
            let manager = try DownloadManager(
                directory: try scratchFolder(), configuration: configuration, resultQueue: log.queue,
                onUpdate: log.handler)
            _ = try manager.add(contentsOf: [DownloadManager.Request(url: fixture.url("/files/m.bin"))])
            #expect(await manager.waitUntilFinished().allSucceeded)
            manager.close()

            // m.bin → attempt (×2) → download m.bin → GET
            await eventually("every span ended") { tracer.finishedSpans.count == 7 }
            let spans = tracer.finishedSpans
            let item = try #require(spans.first { $0.operationName == "m.bin" })
            let attempts = spans.filter { $0.operationName == "attempt" }.sorted { start($0) < start($1) }
            #expect(attempts.map(\.parentSpanID) == [item.spanID, item.spanID])
            #expect(attempts.map { attribute($0, "jobkit.attempt") } == [.int64(1), .int64(2)])
            #expect(attempts.map { $0.errors.count } == [1, 0])
            let downloads = spans.filter { $0.operationName == "download m.bin" }.sorted { start($0) < start($1) }
            #expect(downloads.map(\.parentSpanID) == attempts.map(\.spanID))
            let requests = spans.filter { $0.operationName == "GET" }.sorted { start($0) < start($1) }
            #expect(requests.map(\.parentSpanID) == downloads.map(\.spanID))
        }
    }

    @Test func aRequestOfAUserWithAPasswordIsTracedWithoutIt() async throws {
        var request = URLRequest(url: URL(string: "http://user:secret@127.0.0.1:9/files/a.bin")!)
        let tracer = InMemoryTracer()
        var context = tracer.startSpan("run").context
        context.jobTracer = tracer
        let span = try #require(RequestSpan.start(&request, in: context))
        span.end(nil, URLError(.cannotConnectToHost) as any Error)
        let finished = try #require(tracer.finishedSpans.first { $0.operationName == "GET" })
        #expect(finished.attributes.get("url.full") == .string("http://127.0.0.1:9/files/a.bin"))
        #expect(finished.attributes.get("server.port") == .int64(9))
        #expect(finished.errors.count == 1 && finished.status?.code == .error)
    }

    @Test func anUntracedDownloadStartsNoSpan() {
        var request = URLRequest(url: URL(string: "http://127.0.0.1:9/files/a.bin")!)
        #expect(RequestSpan.start(&request, in: nil) == nil)
        #expect(RequestSpan.start(&request, in: .topLevel) == nil, "a context no SpanTracer made")
        #expect(request.allHTTPHeaderFields?.isEmpty ?? true)
    }
}
