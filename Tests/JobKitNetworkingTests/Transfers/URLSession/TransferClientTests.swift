import Foundation
import JobKit
import JobKitNetworking
import JobKitTestSupport
import JobKitTesting
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Answers every challenge with one user and password, counting the challenges.
final class PasswordDelegate: TransferClientDelegate {
    let challenges = LockedBox<Int>.make(0)

    func transferClient(
        _ client: TransferClient, didReceive challenge: URLAuthenticationChallenge, loading url: URL?,
        completionHandler: @escaping @Sendable (URLSession.AuthChallengeDisposition, URLCredential?) -> Void
    ) {
        challenges.withLock { $0 += 1 }
        guard challenge.previousFailureCount == 0 else { return completionHandler(.cancelAuthenticationChallenge, nil) }
        completionHandler(.useCredential, URLCredential(user: "ada", password: "lovelace", persistence: .none))
    }
}

@Suite struct TransferClientTests {
    @Test func clientsNeverSendEachOthersHeaders() async throws {
        let server = try ScriptedServer { request, _ in
            .respond(200, body: Data((request.headers["x-secret"] ?? "none").utf8))
        }
        defer { server.stop() }
        for round in 0..<200 {
            // Two clients alive at once, and each released after its round: a new client may well
            // reuse the memory of an old one, and must still send only its own headers.
            let configurations = ["a", "b"].map { name in
                let configuration = URLSessionConfiguration.ephemeral
                configuration.httpAdditionalHeaders = ["X-Secret": "\(name)-\(round)"]
                return configuration
            }
            let first = TransferClient(configuration: configurations[0])
            let second = TransferClient(configuration: configurations[1])
            // One request at a time: the test is about identity, not load (and the process-wide thread
            // count that other suites measure stays low).
            let replyA = try await Job<HTTPReply>.data(for: URLRequest(url: server.url("echo")), client: first).value
            let replyB = try await Job<HTTPReply>.data(for: URLRequest(url: server.url("echo")), client: second).value
            #expect(String(decoding: replyA.body, as: UTF8.self) == "a-\(round)")
            #expect(String(decoding: replyB.body, as: UTF8.self) == "b-\(round)")
        }
    }

    @Test func aClientOpensAsManyConnectionsAsItsWidth() async throws {
        let arrivals = Watched(0)
        let allArrived = Gate()
        let width = 8
        // Every request is held until the test has seen `width` of them in flight at once: a client
        // with fewer connections never gets there (the wait's deadline then fails the test, naming
        // how many arrived).
        let server = try ScriptedServer { _, _ in
            arrivals.withLock { $0 += 1 }
            return .waiting(for: allArrived, then: .respond(200, body: Data("ok".utf8)))
        }
        defer { server.stop() }
        let client = TransferClient(configuration: .ephemeral, maxConnectionsPerHost: width)
        #expect(client.configuration.httpMaximumConnectionsPerHost == width)
        let jobs = (0..<width).map { index in
            Job<HTTPReply>.data(for: URLRequest(url: server.url("wait/\(index)")), client: client).asVoid()
        }
        async let answered = awaitCallback("the requests' answers") { done in
            Job.group(jobs, maxConcurrent: width).perform(resultQueue: .global()) { done.resume(returning: $0) }
        }
        let all = await arrivals.until("\(width) requests in flight at once") { $0 == width }
        if !all { Issue.record("\(arrivals.current) of \(width) requests arrived") }
        allArrived.open()
        let result = await answered
        #expect(result.map { (try? $0.get()) != nil } == true, "\(String(describing: result))")
        #expect(server.requests.count == width)
    }

    @Test func authenticationChallengesGoToTheClientsDelegate() async throws {
        let expected = "Basic " + Data("ada:lovelace".utf8).base64EncodedString()
        let server = try ScriptedServer { request, _ in
            request.headers["authorization"] == expected
                ? .respond(200, body: Data("welcome".utf8))
                : .respond(401, headers: ["WWW-Authenticate": "Basic realm=\"jobkit\""])
        }
        defer { server.stop() }
        let delegate = PasswordDelegate()
        let client = TransferClient(configuration: .ephemeral, delegate: delegate)

        let reply = try await Job<HTTPReply>.data(for: URLRequest(url: server.url("private")), client: client).value

        #expect(String(decoding: reply.body, as: UTF8.self) == "welcome")
        #expect(delegate.challenges.withLock { $0 } >= 1)
    }

    @Test func mapAndDecodeRunOnTheJobsQueueNeverOnTheDelegateQueue() async throws {
        let server = try ScriptedServer { _, _ in .respond(200, body: Data("[1,2,3]".utf8)) }
        defer { server.stop() }
        let key = DispatchSpecificKey<String>()
        let queue = DispatchQueue(label: "job queue")
        queue.setSpecific(key: key, value: "job queue")
        let job = Job<[Int]>.decode(for: URLRequest(url: server.url("numbers")))
            .map { numbers in (numbers, DispatchQueue.getSpecific(key: key)) }
        let (numbers, ranOn) = try await awaitCallbackOrThrow("the run's handler") { continuation in
            job.perform(on: queue, resultQueue: .global()) { continuation.resume(returning: $0) }
        }.get()
        #expect(numbers == [1, 2, 3])
        #expect(ranOn == "job queue")
    }

    @Test func errorsNameWhatFailed() async throws {
        let server = try ScriptedServer { _, _ in .respond(404, body: Data("no such feed".utf8)) }
        defer { server.stop() }
        let notFound = await outcome(of: Job<HTTPReply>.data(for: URLRequest(url: server.url("feed"))))
        #expect(notFound.failureError?.localizedDescription == "HTTP 404 Not Found for \(server.url("feed"))")

        let folder = try scratchFolder()
        let destination = folder.appendingPathComponent("file.bin")
        try FileManager.default.createDirectory(
            at: destination.appendingPathExtension("part"), withIntermediateDirectories: true)
        let blocked = await outcome(of: Job<URL>.download(from: server.url("file"), to: destination))
        #expect(blocked.failureError?.localizedDescription == "cannot write \(destination.path).part: Is a directory")

        let refused = await outcome(of: Job<HTTPReply>.data(for: URLRequest(url: URL(string: "http://127.0.0.1:1/x")!)))
        let refusedText = try #require(refused.failureError?.localizedDescription)
        #expect(refusedText.hasPrefix("transfer of http://127.0.0.1:1/x failed: "), "\(refusedText)")
        #expect(TransientFailure.isTransient(try #require(refused.failureError)))
    }

    @Test func retryAfterAsAnHTTPDateIsHonoured() async throws {
        let server = try ScriptedServer { _, index in
            index == 0
                ? .respond(
                    503,
                    headers: ["Date": "Sun, 06 Nov 1994 08:49:37 GMT", "Retry-After": "Sun, 06 Nov 1994 08:50:19 GMT"])
                : .respond(200, body: Data("ok".utf8))
        }
        defer { server.stop() }
        let scheduler = TestScheduler()
        let job = Job<HTTPReply>.data(for: URLRequest(url: server.url("busy")))
            .retryingTransientFailures(attempts: 2, backoff: .constant(.milliseconds(10)), scheduler: scheduler)
        let waiter = Task { try await job.value }
        await scheduler.waitUntilScheduled()
        #expect(scheduler.scheduledDelays == [.seconds(42)])
        scheduler.advance(by: .seconds(42))
        #expect(try await waiter.value.status == 200)
    }

    @Test func aRetryAfterLongerThanTheMaximumFailsWithTheRequestedDelay() async throws {
        let server = try ScriptedServer { _, _ in .respond(429, headers: ["Retry-After": "9223372037"]) }
        defer { server.stop() }
        let result = await outcome(
            of: Job<HTTPReply>.data(for: URLRequest(url: server.url("slow-down"))).retryingTransientFailures())
        let error = try #require(result.failureError as? RetryAfterTooLongError)
        #expect(error.requested == .seconds(9_223_372_037))
        #expect(error.maximum == .seconds(300))
        #expect(error.response.status == 429)
        #expect(error.localizedDescription.contains("9223372037 s"))
        #expect(server.requests.count == 1)
        let absurd = await outcome(
            of: Job<HTTPReply>.data(for: URLRequest(url: server.url("slow-down")))
                .retryingTransientFailures(maxRetryAfter: .seconds(1)))
        #expect(absurd.failureError is RetryAfterTooLongError)
    }

    @Test func oddRetryAfterValuesNeverTrap() async throws {
        let values = ["99999999999999999999999999", "-5", "soon", "1e9", String(repeating: "9", count: 5000)]
        let server = try ScriptedServer { _, index in .respond(503, headers: ["Retry-After": values[index]]) }
        defer { server.stop() }
        var delays: [Duration?] = []
        for _ in values {
            let result = await outcome(of: Job<HTTPReply>.data(for: URLRequest(url: server.url("odd"))))
            delays.append((result.failureError as? HTTPStatusError)?.retryAfter)
        }
        #expect(delays == [.seconds(Int64.max), nil, nil, nil, nil])
    }
}
