import Dispatch
import Foundation
import JobKitTestSupport
import Testing

@testable import JobKit

#if canImport(FoundationXML)
    import FoundationXML
#endif

@Suite struct TracerTests {
    private func tracedRun(_ tracers: [any JobTracer]) async {
        let jobs = (0..<12).map { index in
            Job<Void> { controller in
                controller.queue.asyncAfter(deadline: .now() + .milliseconds(1 + index % 3)) {
                    index == 5 ? controller.fail(with: TestError(id: 5)) : controller.finish()
                }
            }.named("job \(index) <&>")
        }
        var job = Job.settle(jobs.map { $0 }, maxConcurrent: 3).named("downloads")
        for tracer in tracers { job = job.traced(by: tracer) }
        _ = await job.outcome()
    }

    @Test func chromeTraceIsValidJSONWithMatchingBeginAndEndEvents() async throws {
        let writer = ChromeTraceWriter()
        await tracedRun([writer])
        let json = try JSONSerialization.jsonObject(with: try writer.jsonData()) as! [String: Any]
        let events = json["traceEvents"] as! [[String: Any]]
        let begins = events.filter { $0["ph"] as? String == "B" }
        let ends = events.filter { $0["ph"] as? String == "E" }
        #expect(begins.count == 13, "12 members and the group")
        #expect(ends.count == begins.count)
        // Per thread row, begin and end events must pair up like brackets.
        for tid in Set(events.compactMap { $0["tid"] as? Int }) {
            var depth = 0
            let row = events.filter { $0["tid"] as? Int == tid && $0["ph"] as? String != "M" }
            for event in row.sorted(by: { ($0["ts"] as! Double) < ($1["ts"] as! Double) }) {
                depth += event["ph"] as? String == "B" ? 1 : -1
                #expect(depth >= 0 && depth <= 1)
            }
            #expect(depth == 0)
        }
        let group = begins.first { $0["name"] as? String == "downloads" }
        let members = begins.filter { ($0["args"] as? [String: Any])?["parent"] != nil }
        #expect(group != nil)
        #expect(members.count == 12)
        let slots = events.filter { ($0["args"] as? [String: String])?["name"]?.hasPrefix("slot") == true }
        #expect(slots.count == 3, "at most three ran at once: three slot rows")
    }

    @Test func timelineIsWellFormedXMLWithOneBarPerJob() async throws {
        let writer = TimelineSVGWriter()
        await tracedRun([writer])
        let svg = writer.svg()
        let parser = XMLParser(data: Data(svg.utf8))
        let collector = RectCollector()
        parser.delegate = collector
        #expect(parser.parse(), "well-formed XML: \(String(describing: parser.parserError))")
        let classes = collector.classes
        #expect(classes.filter { $0.hasPrefix("job") }.count == 12)
        #expect(classes.filter { $0.hasPrefix("group") }.count == 1)
        #expect(classes.filter { $0 == "job failed" }.count == 1)
        #expect(svg.contains("3 slots"))
    }

    @Test func eventsCarryIDsParentsNamesAndTheLifecycle() async {
        final class Collector: JobTracer {
            let events = Locked<[JobTraceEvent]>([])
            func record(_ event: JobTraceEvent) { events.withLock { $0.append(event) } }
        }
        let collector = Collector()
        let job = Job.sequence([Job<Void>.empty.named("a"), Job<Void>.empty.named("b")]).named("seq")
        _ = await job.traced(by: collector).outcome()
        let events = collector.events.current
        let parent = events.first { $0.name == "seq" }!.runID
        let a = events.filter { $0.name == "a" }
        #expect(a.map(\.kind) == [.enqueued, .started, .finished])
        #expect(a.allSatisfy { $0.parentID == parent })
        #expect(events.filter { $0.name == "seq" }.map(\.kind) == [.enqueued, .started, .finished])
    }

    @Test func eventsCarryTheRetryAttemptAndTheFailedRunsError() async {
        final class Collector: JobTracer {
            let events = Locked<[JobTraceEvent]>([])
            func record(_ event: JobTraceEvent) { events.withLock { $0.append(event) } }
        }
        let collector = Collector()
        let attempts = Locked(0)
        let flaky = Job<Void> { controller in
            let attempt = attempts.withLock {
                $0 += 1; return $0
            }
            attempt < 3 ? controller.fail(with: TestError(id: attempt)) : controller.finish()
        }.named("flaky")
        _ = await flaky.retry(3).named("retry").traced(by: collector).outcome()
        let events = collector.events.current
        let ends = events.filter { $0.name == "flaky" && $0.kind != .enqueued && $0.kind != .started }
        #expect(ends.map(\.attempt) == [1, 2, 3])
        #expect(ends.map(\.kind) == [.failed, .failed, .finished])
        #expect(ends.map { $0.error as? TestError } == [TestError(id: 1), TestError(id: 2), nil])
        #expect(events.filter { $0.name == "retry" }.allSatisfy { $0.attempt == 1 && $0.error == nil })
    }
}

/// Collects the `class` of every `rect` element.
final class RectCollector: NSObject, XMLParserDelegate {
    var classes: [String] = []

    func parser(
        _ parser: XMLParser, didStartElement elementName: String, namespaceURI: String?, qualifiedName: String?,
        attributes: [String: String] = [:]
    ) {
        if elementName == "rect", let value = attributes["class"] { classes.append(value) }
    }
}
