import AsyncHTTPClient
import Foundation
import JobKit
import JobKitTestSupport
import JobKitTesting
import NIOCore
import NIOPosix
import Testing

@testable import JobKitNetworking

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The read timeout of an AsyncHTTPClient download counts the server's silence only (issue 31: a
/// download at `--max-download-limit 1K` failed as `readTimeout` after 77 s).
@Suite struct ReadSilenceTests {
    @Test func timeCountsOnlyWhileTheTransferReads() {
        var silence = ReadSilence(limit: .seconds(60), now: .seconds(0))
        #expect(silence.deadline == .seconds(60))
        silence.heard(at: .seconds(10))
        #expect(!silence.hasExpired(at: .seconds(69)))
        #expect(silence.hasExpired(at: .seconds(70)))
        silence.paused()
        #expect(silence.deadline == nil)
        #expect(!silence.hasExpired(at: .seconds(10_000)), "a speed limit's wait is not the server's silence")
        silence.heard(at: .seconds(10_001))
        #expect(silence.deadline == nil, "bytes heard while paused do not start the count")
        silence.resumed(at: .seconds(10_000))
        #expect(!silence.hasExpired(at: .seconds(10_059)))
        #expect(silence.hasExpired(at: .seconds(10_060)))
    }

    /// One event loop, so that a task submitted to it runs after everything queued on it before.
    private static func client() -> (HTTPClient, any EventLoopGroup) {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        var configuration = HTTPClient.Configuration(redirectConfiguration: .disallow)
        configuration.decompression = .disabled
        return (HTTPClient(eventLoopGroupProvider: .shared(group), configuration: configuration), group)
    }

    /// A run of `HTTPClientTransfer` for `url`: finishes with the bytes received.
    private static func transfer(
        _ url: URL, on client: HTTPClient, throttle: Throttle?, clock: TestScheduler, answered: Gate = Gate()
    ) -> Job<Int64> {
        Job<URL> { controller in
            let handler = TransferHandler()
            handler.onResponse = { _ in
                answered.open()
                return true
            }
            handler.onComplete = { _, error in
                if let error { controller.fail(with: error) } else { controller.finish(url) }
            }
            HTTPClientTransfer.start(
                URLRequest(url: url), on: client, handler: handler, for: controller, throttle: throttle,
                silenceLimit: .seconds(60), silenceScheduler: clock)
        }.map { _ in 0 }
    }

    @Test func aDownloadWaitingOnItsSpeedLimitForLongerThanTheReadTimeoutDoesNotFail() async throws {
        let (http, group) = Self.client()
        let clock = TestScheduler()
        let limitClock = TestScheduler()
        let gate = Gate()
        let body = pattern(64 * 1024)
        let server = try ScriptedServer { _, _ in .stall(body: body, sent: 32 * 1024, until: gate) }
        let limiter = BandwidthLimiter<DownloadManager.ItemID>(overall: 1024, scheduler: limitClock)
        let throttle = Throttle(limiter: limiter, item: DownloadManager.ItemID(rawValue: 1))
        let run = Self.transfer(server.url("slow"), on: http, throttle: throttle, clock: clock)
        async let result = outcome(of: run)

        await limitClock.waitUntilScheduled()  // the speed limit holds the transfer back
        clock.advance(by: .seconds(100))  // for 100 s, far past the 60 s a silent server gets
        try await group.next().submit {}.get()  // the silence check, if it ran, ran on the loop before this
        gate.open()
        limiter.setOverall(nil)

        #expect(try await result.get() == 0)
        server.stop()
        try await http.shutdown()
        try await group.shutdownGracefully()
    }

    @Test func aServerSilentForTheReadTimeoutWhileTheTransferReadsFailsItAsTimedOut() async throws {
        let (http, group) = Self.client()
        let clock = TestScheduler()
        let gate = Gate()
        // The head, then nothing.
        let server = try ScriptedServer { _, _ in .stall(body: pattern(4096), sent: 0, until: gate) }
        let answered = Gate()
        let run = Self.transfer(server.url("silent"), on: http, throttle: nil, clock: clock, answered: answered)
        async let result = outcome(of: run)

        await withCheckedContinuation { continuation in answered.whenOpen { continuation.resume() } }
        await clock.waitUntilScheduled()  // the request is out: the silence counts
        clock.advance(by: .seconds(61))

        let error = try #require(await result.failureError as? TransportError)
        #expect(error.code == .timedOut)
        gate.open()
        server.stop()
        try await http.shutdown()
        try await group.shutdownGracefully()
    }
}
