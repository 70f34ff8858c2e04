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

/// A running server with a files folder, for one test.
struct ServerFixture {
    let server: LoopbackServer
    let root: URL

    static func start(_ plan: FaultPlan = FaultPlan()) async throws -> ServerFixture {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("jobkit-\(UUID().uuidString)")
        return ServerFixture(server: try await LoopbackServer.start(.init(root: root, faults: plan)), root: root)
    }

    func url(_ path: String) -> URL { URL(string: path, relativeTo: server.baseURL)!.absoluteURL }

    /// Writes a file of `count` deterministic bytes under `files/`.
    func makeFile(_ name: String, count: Int) throws -> Data {
        let data = Data((0..<count).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) })
        try data.write(to: root.appendingPathComponent("files/\(name)"))
        return data
    }

    func stop() async {
        await server.stop()
        try? FileManager.default.removeItem(at: root)
    }
}

/// Runs `body` with a fresh server, stopping it afterwards whatever happens.
func withFixture(_ plan: FaultPlan = FaultPlan(), _ body: (ServerFixture) async throws -> Void) async throws {
    let fixture = try await ServerFixture.start(plan)
    do {
        try await body(fixture)
    } catch {
        await fixture.stop()
        throw error
    }
    await fixture.stop()
}
