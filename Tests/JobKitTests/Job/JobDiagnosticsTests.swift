import Foundation
import JobKitTestSupport
import Testing

@testable import JobKit

@Suite struct JobDiagnosticsTests {
    /// With no handler installed, a misuse repeated a thousand times prints one line.
    @Test func repeatedMisuseIsPrintedOncePerProcessAndCounted() async throws {
        let output = try await runProduct("JobKitProbe", arguments: ["twice", "1000"])
        #expect(keyValues(output.stdout)["count"] == 1_000)
        let lines = output.stderr.split(separator: "\n").filter { $0.contains("completed twice") }
        #expect(lines.count == 1, "\(output.stderr.prefix(500))")
        #expect(lines.first?.contains("eventCount") == true)
    }

    @Test func aHandlerCapturesEveryMisuseInsteadOfPrinting() async throws {
        let seen = Locked<[ObjectIdentifier]>([])
        let token = JobDiagnostics.addHandler { event in seen.withLock { $0.append(event.runID) } }
        defer { JobDiagnostics.removeHandler(token) }
        let bodyReturned = OutcomeBox<Void>()
        let (handle, outcome) = Job<Int> { controller in
            controller.finish(1)
            controller.fail(with: TestError(id: 1))
            controller.finish(3)
            bodyReturned.set(.success(()))
        }.started()
        #expect(try await outcome.result.get() == 1)
        _ = await bodyReturned.result  // the handler may run before the body's later calls
        #expect(seen.current.filter { $0 == handle.id }.count == 1, "once per run")
    }
}
