import Foundation
import JobKitTestSupport
import Testing

@testable import JobKitServer

/// Thousands of malformed requests over raw sockets: the server answers or closes each, and lives on.
@Suite struct MalformedRequestFuzzTests {
    static let requestCount = 2_000

    /// One malformed request of kind `index % 10`.
    private static func malformedRequest(_ index: Int, using random: inout SplitMix64) -> [UInt8] {
        func junk(_ count: Int) -> [UInt8] { (0..<count).map { _ in UInt8.random(in: 0...255, using: &random) } }
        func text(_ count: Int) -> String {
            String((0..<count).map { _ in "abcXYZ019-=;,.:/%\t ".randomElement(using: &random) ?? "a" })
        }
        switch index % 10 {
        case 0:
            return junk(Int.random(in: 1...2_000, using: &random))
        case 1:
            let whole = Array("GET /products/1 HTTP/1.1\r\nHost: x\r\nX-Fault-Status: 503\r\n\r\n".utf8)
            return Array(whole.prefix(Int.random(in: 1..<whole.count, using: &random)))
        case 2:
            let size = Int.random(in: 17_000...120_000, using: &random)
            return Array("GET /feed HTTP/1.1\r\nHost: x\r\nX-Long: \(String(repeating: "a", count: size))\r\n\r\n".utf8)
        case 3:
            let chunk = ["zz", "-5", "ffffffffffffffffffff", "3\r\nabcdef", "5;\u{0}", "1\r\na"].randomElement(
                using: &random)!
            return Array(
                ("POST /posts HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
                    + "\(chunk)\r\n\(text(8))\r\n0\r\n\r\n").utf8)
        case 4:
            let promised = Int.random(in: 10...1_000_000, using: &random)
            return Array("PUT /media/lie.bin HTTP/1.1\r\nHost: x\r\nContent-Length: \(promised)\r\n\r\nshort".utf8)
        case 5:
            return Array(
                ("POST /posts HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 3\r\n\r\n"
                    + #"{"text":"x","mediaIDs":[]}"#).utf8)
        case 6:
            let header = ["X-Fault-Status", "X-Fault-Latency-Ms", "X-Fault-Drop", "Range", "If-Range"]
                .randomElement(using: &random)!
            let path = ["/files/f.bin", "/feed", "/posts", "/products/\(text(3))", "/\(text(20))"]
                .randomElement(using: &random)!
            return Array("GET \(path) HTTP/1.1\r\nHost: x\r\n\(header): \(text(12))\r\n\r\n".utf8)
        case 7:
            let lines = (0..<Int.random(in: 201...400, using: &random)).map { "X-\($0): v\r\n" }.joined()
            return Array("GET /feed HTTP/1.1\r\nHost: x\r\n\(lines)\r\n".utf8)
        case 8:
            return Array(
                "POST /posts HTTP/1.1\r\nHost: x\r\nContent-Length: -\(text(2))\r\nTransfer-Encoding: chunked\r\n\r\n"
                    .utf8)
        default:
            return Array("\(text(6)) /\(text(10)) HTTP/\(text(3))\r\n\(text(15))\r\nHost\0: x\r\n\r\n".utf8) + junk(20)
        }
    }

    /// Runs in a child process of its own (an exit test): resident memory is the whole process's,
    /// and in a full run the other tests allocate hundreds of MiB beside it.
    @Test(.timeLimit(.minutes(10)))
    func thousandsOfMalformedRequestsLeaveTheServerAnsweringWithBoundedMemory() async {
        await #expect(processExitsWith: .success) {
            try await Self.fuzzTheServerCheckingMemory()
        }
    }

    /// The body of the test above: every `#require` that fails ends the child with a failure.
    private static func fuzzTheServerCheckingMemory() async throws {
        let root = temporaryRoot()
        try FileManager.default.createDirectory(
            at: root.appendingPathComponent("files"), withIntermediateDirectories: true)
        try Data(count: 100).write(to: root.appendingPathComponent("files/f.bin"))
        try await withServer(root: root) { server, root in
            let port = server.port
            let memoryBefore = residentMemory()
            let silent = try await blocking {
                var random = SplitMix64(seed: 0x10)
                var silent = 0
                for index in 0..<Self.requestCount {
                    let socket = try RawSocket(port: port, timeout: 30)
                    socket.send(Self.malformedRequest(index, using: &random))
                    socket.finishSending()
                    if socket.receive(limit: 64 << 10).timedOut { silent += 1 }
                    socket.close()
                }
                return silent
            }
            try #require(silent == 0, "every malformed request is answered or its connection closed")
            if let before = memoryBefore, let after = residentMemory() {
                try #require(after - before < 150 << 20, "resident memory grew by \((after - before) >> 20) MiB")
            }
            try #require(try await request(server, "products/1").status == 200)
            try #require(try await postRequest(server, text: "still here").status == 201)
            let leftovers = try FileManager.default.contentsOfDirectory(
                atPath: root.appendingPathComponent("media").path)
            try #require(leftovers.isEmpty, "no partial upload stays behind: \(leftovers)")
        }
    }
}
