import Foundation
import JobKit
import JobKitServer
import JobKitTestSupport
import Logging
import Testing

@testable import JobKitNetworking

/// What a `DownloadManager` logs through the `Logger` of its configuration.
@Suite struct DownloadLogTests {
    private func run(
        _ requests: [DownloadManager.Request], retry: DownloadManager.RetryPolicy, logger: Logger?
    ) async throws -> DownloadManager.Summary {
        let log = UpdateLog()
        var configuration = testConfiguration(log, retry: retry)
        if let logger { configuration.logger = logger }
        let manager = try DownloadManager(
            directory: try scratchFolder(), configuration: configuration, resultQueue: log.queue, onUpdate: log.handler)
        _ = try manager.add(contentsOf: requests)
        let summary = await manager.waitUntilFinished()
        manager.close()
        return summary
    }

    @Test func aRetriedDownloadLogsAWarningAndItsStateChangesAtDebug() async throws {
        try await withFixture { fixture in
            _ = try fixture.makeFile("a.bin", count: 2048)
            fixture.server.faults.failNext(1, status: 503, method: "GET", path: "/files/a.bin")
            let captured = CapturedLog()
            let summary = try await run(
                [.init(url: fixture.url("/files/a.bin"))], retry: .init(attempts: 3, backoff: .none),
                logger: captured.logger())
            #expect(summary.allSucceeded)

            let lines = captured.lines(of: "a.bin")
            let warnings = lines.filter { $0.level == .warning }
            #expect(warnings.map(\.message) == ["download attempt failed; retrying"])
            #expect(warnings.first?.metadata["download.attempt"] == "1")
            #expect(warnings.first?.metadata["error"]?.contains("503") == true)
            let debug = lines.filter { $0.level == .debug }.map(\.message)
            #expect(debug.first == "download started")
            #expect(debug.last == "download completed")
            #expect(debug.filter { $0 == "response received" }.count == 2, "the 503, then the 200")
            #expect(!lines.contains { $0.level >= .error })
            #expect(lines.allSatisfy { $0.metadata["download.url"] == fixture.url("/files/a.bin").absoluteString })
            #expect(lines.allSatisfy { $0.metadata["download.id"] == "1" })
        }
    }

    @Test func aFailedDownloadLogsAnErrorWithoutTheURLsPassword() async throws {
        try await withFixture { fixture in
            var components = URLComponents(url: fixture.url("/files/missing.bin"), resolvingAgainstBaseURL: false)!
            components.user = "user"
            components.password = "secret"
            let captured = CapturedLog()
            let summary = try await run(
                [.init(url: components.url!)], retry: .init(attempts: 3, backoff: .none), logger: captured.logger())
            #expect(summary.failed.count == 1)

            let lines = captured.lines(of: "missing.bin")
            let errors = lines.filter { $0.level == .error }
            #expect(errors.map(\.message) == ["download failed"])
            #expect(errors.first?.metadata["error"]?.contains("404") == true)
            #expect(errors.first?.metadata["error.kind"] == "http-status")
            #expect(!lines.contains { $0.level == .warning }, "a 404 is not retried")
            #expect(errors.first?.metadata["download.url"] == fixture.url("/files/missing.bin").absoluteString)
            for line in captured.all {
                #expect(!line.message.contains("secret") && !line.metadata.values.contains { $0.contains("secret") })
            }
        }
    }

    @Test func aLoggerAtWarningHearsNoStateChanges() async throws {
        try await withFixture { fixture in
            _ = try fixture.makeFile("b.bin", count: 16)
            let captured = CapturedLog()
            let summary = try await run(
                [.init(url: fixture.url("/files/b.bin"))], retry: .init(attempts: 2, backoff: .none),
                logger: captured.logger(level: .warning))
            #expect(summary.allSucceeded)
            #expect(captured.all.isEmpty)
        }
    }

    @Test func nothingIsLoggedByDefault() {
        let configuration = DownloadManager.Configuration()
        #expect(configuration.logger.handler is SwiftLogNoOpLogHandler, "not LoggingSystem's handler: no output")
    }
}
