import Foundation
import JobKit
import JobKitTestSupport
import Testing

@testable import JobKitNetworking

/// A server that answers every request with random statuses, lengths, ranges, validators and bodies —
/// numbers near and past `Int64.max`, negative, garbage — through a real socket and AsyncHTTPClient.
/// Nothing may trap, and every item must end (completed or failed).
@Suite(.timeLimit(.minutes(10))) struct DownloadResponseFuzzTests {
    /// `JOBKIT_FUZZ_CASES` overrides the 10,000 cases.
    private static var caseCount: Int {
        ProcessInfo.processInfo.environment["JOBKIT_FUZZ_CASES"].flatMap(Int.init).map { max($0, 1) } ?? 10_000
    }

    @Test func randomHeadersAndBodiesNeverTrapAndEveryItemEnds() async throws {
        let seed =
            ProcessInfo.processInfo.environment["JOBKIT_FUZZ_SEED"].flatMap(UInt64.init)
            ?? UInt64.random(in: 1...UInt64.max)
        let server = try ScriptedServer { request, _ in Self.reply(to: request, seed: seed) }
        defer { server.stop() }
        let folder = try scratchFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        // No update log: its snapshots of thousands of items would weigh on the other suites' memory checks.
        var configuration = testConfiguration(UpdateLog(), maxConcurrent: 16)
        configuration.progressInterval = .seconds(1)
        let manager = try DownloadManager(directory: folder, configuration: configuration)
        defer { manager.close() }
        var ended = 0
        var completed = 0
        let batch = 500
        var next = 0
        while next < Self.caseCount {
            let count = min(batch, Self.caseCount - next)
            let requests = (next..<next + count).map { DownloadManager.Request(url: server.url("case/\($0)")) }
            next += count
            let ids = try manager.add(contentsOf: requests)
            let summary = await manager.waitUntilFinished()
            let states = Dictionary(summary.items.map { ($0.id, $0.state) }, uniquingKeysWith: { $1 })
            for id in ids {
                let state = try #require(states[id], "seed \(seed)")
                #expect(!state.isActive, "seed \(seed): \(id) is \(state)")
                if state == .completed { completed += 1 }
                ended += 1
            }
            _ = summary.totals.fraction
            manager.removeAll(deletingFiles: true)
        }
        #expect(ended == Self.caseCount, "seed \(seed)")
        #expect(completed > 0 && completed < ended, "seed \(seed): some succeed, some fail (\(completed) of \(ended))")
    }

    /// A reply drawn from `seed` and the request (its path and range): the same request, the same reply.
    static func reply(to request: ScriptedServer.Request, seed: UInt64) -> ScriptedServer.Reply {
        // FNV-1a of the path: stable across processes, so a seed replays.
        let pathHash = request.path.utf8.reduce(0xCBF2_9CE4_8422_2325 as UInt64) {
            ($0 ^ UInt64($1)) &* 0x100_0000_01B3
        }
        var random = SplitMix64(seed: seed ^ pathHash)
        let size = Int(random.next() % 2_000)
        let body = pattern(size, seed: Int(random.next() % 255))
        let numbers = [
            "0", "1", "\(size)", "\(size + 1)", "\(max(size - 1, 0))", "-1", "5000000000000000000",
            "9223372036854775807", "9223372036854775808", "18446744073709551616", "1e18", "abc", "", " 12 ", "0x10",
            "\(Int64.max - 1)", "\(1 << 50)", "\((1 << 50) + 1)",
        ]
        func number() -> String { numbers[Int(random.next() % UInt64(numbers.count))] }
        var headers: [String: String] = [:]
        if random.next() % 2 == 0 { headers["Content-Length"] = number() }
        if random.next() % 3 == 0 {
            let forms = [
                "bytes \(number())-\(number())/\(number())", "bytes */\(number())", "bytes 0-\(number())/*",
                "garbage", "bytes \(number())-\(number())/\(size)",
            ]
            headers["Content-Range"] = forms[Int(random.next() % UInt64(forms.count))]
        }
        if random.next() % 2 == 0 { headers["ETag"] = random.next() % 2 == 0 ? "\"v1\"" : "W/\"v2\"" }
        if random.next() % 3 == 0 { headers["Last-Modified"] = "Tue, 24 Nov 2026 00:00:00 GMT" }
        if random.next() % 5 == 0 { headers["Content-Encoding"] = "gzip" }
        if random.next() % 6 == 0 { headers["Retry-After"] = number() }
        let statuses = [200, 200, 200, 206, 206, 204, 301, 304, 404, 416, 500, 503]
        let status = statuses[Int(random.next() % UInt64(statuses.count))]
        switch random.next() % 8 {
        case 0: return .drop(headers: headers, body: body, sent: Int(random.next() % UInt64(size + 1)))
        case 1:
            let head = "HTTP/1.1 \(status) X\r\nContent-Length: \(number())\r\nConnection: close\r\n\r\n"
            return .raw(Data(head.utf8) + body)
        default: return .respond(status, headers: headers, body: body)
        }
    }
}
