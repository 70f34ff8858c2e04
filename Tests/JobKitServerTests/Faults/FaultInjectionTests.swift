import Foundation
import Hummingbird
import Testing

@testable import JobKitServer

/// Fault headers and `FaultController` arguments: validated, never a trap.
@Suite struct FaultInjectionTests {
    private func parse(_ fields: [String: String]) -> Result<
        FaultController.RequestFaults, FaultController.FaultHeaderError
    > {
        var headers = HTTPFields()
        for (name, value) in fields {
            if let name = HTTPFields.Element.Name(name) { headers[name] = value }
        }
        return FaultController.RequestFaults.parse(headers)
    }

    @Test func faultHeadersOutsideTheirRangesAreRefused() {
        for (name, value) in [
            ("X-Fault-Status", "1000"), ("X-Fault-Status", "0"), ("X-Fault-Status", "99"), ("X-Fault-Status", "100"),
            ("X-Fault-Status", "abc"), ("X-Fault-Latency-Ms", "999999999999999"), ("X-Fault-Latency-Ms", "-1"),
            ("X-Fault-Latency-Ms", "60001"), ("X-Fault-Drop", "yes"),
        ] {
            guard case .failure(let error) = parse([name: value]) else {
                Issue.record("\(name): \(value) was accepted")
                continue
            }
            #expect(error.message.hasPrefix("\(name) must be"), "\(error.message)")
        }
        #expect((try? parse(["X-Fault-Status": "503", "X-Fault-Latency-Ms": "60000"]).get())?.status == 503)
    }

    @Test func badFaultHeadersAre400WithAMessageAndTheServerGoesOn() async throws {
        try await withServer { server, _ in
            for (name, value) in [
                ("X-Fault-Status", "1000"), ("X-Fault-Status", "99"), ("X-Fault-Latency-Ms", "999999999999999"),
            ] {
                let answer = try await request(server, "feed", headers: [name: value])
                #expect(answer.status == 400)
                #expect(answer.errorMessage?.contains(name) == true)
            }
            let injected = try await request(server, "feed", headers: ["X-Fault-Status": "599"])
            #expect(injected.status == 599 && injected.errorMessage == "injected failure")
            #expect(try await request(server, "feed").status == 200)
        }
    }

    @Test func failNextWithANegativeOrHugeCountNeverTraps() async throws {
        try await withServer { server, _ in
            server.faults.failNext(-1)
            server.faults.failNext(0)
            #expect(try await request(server, "feed").status == 200, "a count below 1 does nothing")
            server.faults.failNext(Int.max, status: 1000)
            let answer = try await request(server, "feed")
            #expect(answer.status == 500, "a status outside 200…599 becomes 500")
            server.faults.plan = FaultPlan(latencyMilliseconds: -5...(-1), failureStatus: 42)
        }
    }

    @Test func planValuesOutsideTheirRangesAreClamped() {
        let plan = FaultPlan(latencyMilliseconds: 10...Int.max)
        #expect((10...FaultPlan.maximumLatencyMilliseconds).contains(plan.drawLatency()))
        #expect(FaultPlan(latencyMilliseconds: -9...(-3)).drawLatency() == 0)
        #expect(FaultPlan.sanitized(status: 42) == 500 && FaultPlan.sanitized(status: 429) == 429)
        #expect(!FaultPlan.happens(rate: .nan) && FaultPlan.happens(rate: 7))
    }

    @Test func aScriptedFailureTakesOnlyRequestsOfItsMethodAndPath() async throws {
        try await withServer { server, _ in
            server.faults.failNext(2, status: 503, method: "get", path: "/posts")
            let feed = try await request(server, "feed")
            #expect(feed.status == 200, "another path")
            #expect(try await postRequest(server, text: "t").status == 201, "another method")
            #expect(try await request(server, "posts/1").status == 200, "another path")
            #expect(try await request(server, "posts").status == 503)
            #expect(try await request(server, "posts?x=1").status == 503, "the path without its query")
            #expect(try await request(server, "posts").status == 200)
        }
    }

    @Test func aDroppedAnswerComesAfterTheRouteDidItsWork() async throws {
        try await withServer { server, _ in
            server.faults.dropNextAnswers(0)
            server.faults.dropNextAnswers(-5)
            server.faults.dropNextAnswers(1, method: "POST", path: "/posts")
            #expect(try await request(server, "posts").status == 200, "another method")
            await #expect(throws: (any Error).self) { try await postRequest(server, text: "stored") }
            let posts = try await request(server, "posts")
            #expect(String(decoding: posts.body, as: UTF8.self).contains("stored"), "the post was stored")
            #expect(try await postRequest(server, text: "next").status == 201, "one answer only")
        }
    }
}
