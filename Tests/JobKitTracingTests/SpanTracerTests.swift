import Dispatch
import InMemoryTracing
import JobKit
import JobKitTestSupport
import JobKitTracing
import Testing
import Tracing

@Suite struct SpanTracerTests {
    private struct AttemptError: Error, Equatable {
        let attempt: Int
    }

    private func outcome<Value: Sendable>(of job: Job<Value>) async -> Result<Value, any Error> {
        await awaitCallback("the run's handler") { continuation in
            job.perform(resultQueue: DispatchQueue(label: "test.results")) { continuation.resume(returning: $0) }
        } ?? .failure(WaitTimedOut("the run's handler", timeout: safetyDeadline))
    }

    private func attribute(_ span: FinishedInMemorySpan, _ name: String) -> SpanAttribute? {
        span.attributes.get(name)
    }

    @Test func aRetriedDownloadTreeExportsAsNestedSpansWithTheAttemptsErrors() async throws {
        let tracer = InMemoryTracer()
        let attempts = Locked(0)
        // Like a download that fails twice (a reset connection, a 503) and then succeeds.
        let download = Job<Void> { controller in
            let attempt = attempts.withLock {
                $0 += 1; return $0
            }
            controller.queue.asyncAfter(deadline: .now() + .milliseconds(1)) {
                attempt < 3 ? controller.fail(with: AttemptError(attempt: attempt)) : controller.finish()
            }
        }.named("download a.bin")
        let job = Job.group([
            download.retry(3).named("retrying a.bin"),
            Job<Void>.empty.named("download b.bin"),
        ]).named("downloads")
        let result = await outcome(of: job.traced(by: SpanTracer(tracer: tracer)))
        #expect(throws: Never.self) { try result.get() }

        let spans = tracer.finishedSpans
        #expect(spans.count == 6, "the group, the retry, three attempts, the other download")
        #expect(tracer.activeSpans.isEmpty)
        let root = try #require(spans.first { $0.operationName == "downloads" })
        #expect(root.parentSpanID == nil)
        let retry = try #require(spans.first { $0.operationName == "retrying a.bin" })
        let other = try #require(spans.first { $0.operationName == "download b.bin" })
        #expect(retry.parentSpanID == root.spanID)
        #expect(other.parentSpanID == root.spanID)
        #expect(Set(spans.map(\.traceID)).count == 1, "one trace")

        let tries = spans.filter { $0.operationName == "download a.bin" }
            .sorted { $0.startInstant.nanosecondsSinceEpoch < $1.startInstant.nanosecondsSinceEpoch }
        #expect(tries.count == 3)
        #expect(tries.allSatisfy { $0.parentSpanID == retry.spanID }, "each attempt is a child of the retry")
        #expect(tries.map { attribute($0, "jobkit.attempt") } == [.int64(1), .int64(2), .int64(3)])
        #expect(
            tries.map { attribute($0, "jobkit.outcome") } == [
                .string("failed"), .string("failed"), .string("finished"),
            ])
        #expect(
            tries.map { $0.errors.map { $0.error as? AttemptError } } == [
                [AttemptError(attempt: 1)], [AttemptError(attempt: 2)], [],
            ])
        #expect(tries.map { $0.status?.code } == [.error, .error, nil])
        #expect(tries.allSatisfy { $0.events.map(\.name) == ["started"] })
        #expect(attribute(retry, "jobkit.outcome") == .string("finished"))
        #expect(attribute(retry, "jobkit.job.name") == .string("retrying a.bin"))
        #expect(root.errors.isEmpty && root.status == nil)
        for span in spans {
            #expect(span.startInstant.nanosecondsSinceEpoch <= span.endInstant.nanosecondsSinceEpoch)
        }
        #expect(retry.startInstant.nanosecondsSinceEpoch <= tries[0].startInstant.nanosecondsSinceEpoch)
        #expect(tries[2].endInstant.nanosecondsSinceEpoch <= retry.endInstant.nanosecondsSinceEpoch)
    }

    @Test func aChainsStepsAreChildrenOfTheChain() async throws {
        let tracer = InMemoryTracer()
        let chain = Job.just(1).named("first").then { value in Job.just(value + 1).named("second") }.named("chain")
        let result = await outcome(of: chain.traced(by: SpanTracer(tracer: tracer)))
        #expect(try result.get() == 2)
        let spans = tracer.finishedSpans
        let root = try #require(spans.first { $0.operationName == "chain" })
        let steps = spans.filter { $0.parentSpanID == root.spanID }.map(\.operationName)
        #expect(Set(steps) == ["first", "second"])
    }

    @Test func aCancelledRunIsMarkedCancelledNotFailed() async throws {
        let tracer = InMemoryTracer()
        let started = Locked(false)
        let stalled = Job<Void> { controller in
            started.withLock { $0 = true }
            controller.onCancel {}
        }.named("stalled")
        let handle = Job.group([stalled]).named("group").traced(by: SpanTracer(tracer: tracer))
            .perform(resultQueue: DispatchQueue(label: "test.results")) { _ in }
        await eventually("the member started") { started.current }
        handle.cancel()
        await eventually("both spans ended") { tracer.finishedSpans.count == 2 }
        for span in tracer.finishedSpans {
            #expect(attribute(span, "jobkit.outcome") == .string("cancelled"), "\(span.operationName)")
            #expect(span.events.map(\.name).contains("cancelled"))
            #expect(span.errors.isEmpty)
            #expect(span.status == nil)
        }
    }

    @Test func topLevelRunsAreChildrenOfTheContextTheTracerWasMadeIn() async throws {
        let tracer = InMemoryTracer()
        let request = tracer.startSpan("GET /downloads")
        let spans = SpanTracer(tracer: tracer, context: request.context)
        _ = await outcome(of: Job.just(1).named("load").traced(by: spans))
        request.end()
        let load = try #require(tracer.finishedSpans.first { $0.operationName == "load" })
        #expect(load.parentSpanID == request.spanID)
        #expect(load.traceID == request.traceID)
    }

    @Test func aRunsBodyRunsWithItsSpanAsTheCurrentContext() async throws {
        let tracer = InMemoryTracer()
        let inBody = Job<Void> { controller in
            tracer.withSpan("made by the body") { _ in }
            controller.finish()
        }.named("body")
        let inTask = Job<Void> { tracer.withSpan("made by the task") { _ in } }.named("async")
        _ = await outcome(of: Job.sequence([inBody, inTask]).traced(by: SpanTracer(tracer: tracer)))
        let spans = tracer.finishedSpans
        let body = try #require(spans.first { $0.operationName == "body" })
        let async = try #require(spans.first { $0.operationName == "async" })
        #expect(spans.first { $0.operationName == "made by the body" }?.parentSpanID == body.spanID)
        #expect(spans.first { $0.operationName == "made by the task" }?.parentSpanID == async.spanID)
        #expect(ServiceContext.current == nil, "the scope ends with the body")
    }

    @Test func anUntracedJobMakesNoSpans() async {
        let tracer = InMemoryTracer()
        _ = SpanTracer(tracer: tracer)
        _ = await outcome(of: Job.group([Job<Void>.empty, .empty]).named("not traced"))
        #expect(tracer.finishedSpans.isEmpty && tracer.activeSpans.isEmpty)
    }
}
