import Foundation
import Testing

@testable import JobKitServer

/// `GET /files/...` over HTTP: RFC 9110 ranges, validators and `If-Range`.
@Suite struct FileRoutesTests {
    private let bytes = Data((0..<20).map { UInt8($0) })

    private func withFile(_ body: (LoopbackServer) async throws -> Void) async throws {
        let root = temporaryRoot()
        try FileManager.default.createDirectory(
            at: root.appendingPathComponent("files/sub"), withIntermediateDirectories: true)
        try bytes.write(to: root.appendingPathComponent("files/sub/twenty.bin"))
        try await withServer(root: root) { server, _ in try await body(server) }
    }

    @Test func suffixAndClampedRangesAre206WithContentRange() async throws {
        try await withFile { server in
            let suffix = try await request(server, "files/sub/twenty.bin", headers: ["Range": "bytes=-5"])
            #expect(suffix.status == 206 && suffix.body == bytes[15..<20])
            #expect(suffix.headers["content-range"] == "bytes 15-19/20")
            let clamped = try await request(server, "files/sub/twenty.bin", headers: ["Range": "bytes=18-100"])
            #expect(clamped.status == 206 && clamped.body == bytes[18..<20])
            #expect(clamped.headers["content-length"] == "2")
        }
    }

    @Test func unsatisfiableRangesAre416WithTheLength() async throws {
        try await withFile { server in
            for range in ["bytes=25-30", "bytes=20-"] {
                let answer = try await request(server, "files/sub/twenty.bin", headers: ["Range": range])
                #expect(answer.status == 416, "\(range)")
                #expect(answer.headers["content-range"] == "bytes */20")
                #expect(answer.errorMessage?.contains("20 bytes") == true)
            }
        }
    }

    @Test func unknownUnitsGetTheWholeFile() async throws {
        try await withFile { server in
            let answer = try await request(server, "files/sub/twenty.bin", headers: ["Range": "items=0-5"])
            #expect(answer.status == 200 && answer.body == bytes)
        }
    }

    @Test func severalRangesAreMultipartByteranges() async throws {
        try await withFile { server in
            let answer = try await request(server, "files/sub/twenty.bin", headers: ["Range": "bytes=0-1,10-12"])
            #expect(answer.status == 206)
            let type = try #require(answer.headers["content-type"])
            #expect(type.hasPrefix("multipart/byteranges; boundary="))
            let boundary = String(type.dropFirst("multipart/byteranges; boundary=".count))
            var expected = Data()
            for (range, slice) in [("0-1", bytes[0..<2]), ("10-12", bytes[10..<13])] {
                expected += Data("\r\n--\(boundary)\r\nContent-Type: application/octet-stream\r\n".utf8)
                expected += Data("Content-Range: bytes \(range)/20\r\n\r\n".utf8) + slice
            }
            expected += Data("\r\n--\(boundary)--\r\n".utf8)
            #expect(answer.body == expected)
        }
    }

    @Test func validatorsAreSentAndIfRangeIsHonoured() async throws {
        try await withFile { server in
            let whole = try await request(server, "files/sub/twenty.bin")
            let etag = try #require(whole.headers["etag"])
            let lastModified = try #require(whole.headers["last-modified"])
            #expect(etag.hasPrefix("\"") && !etag.hasPrefix("W/"), "a strong validator")
            #expect(lastModified.hasSuffix(" GMT") && whole.headers["accept-ranges"] == "bytes")
            for validator in [etag, lastModified] {
                let same = try await request(
                    server, "files/sub/twenty.bin", headers: ["Range": "bytes=0-3", "If-Range": validator])
                #expect(same.status == 206 && same.body == bytes[0..<4])
            }
            for validator in ["\"other\"", "W/\(etag)", "Mon, 01 Jan 2001 00:00:00 GMT"] {
                let changed = try await request(
                    server, "files/sub/twenty.bin", headers: ["Range": "bytes=0-3", "If-Range": validator])
                #expect(changed.status == 200 && changed.body == bytes, "\(validator)")
            }
        }
    }

    @Test func traversalAndFoldersAreNotFound() async throws {
        try await withFile { server in
            for path in ["files/sub", "files/../posts.jsonl", "files/sub/.hidden", "files/%2e%2e/posts.jsonl"] {
                let answer = try await request(server, path)
                #expect(answer.status == 404, "\(path)")
                #expect(answer.errorMessage != nil)
            }
        }
    }
}
