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

    @Test func aChangedFileIsServedAnewWithANewETag() async throws {
        let root = temporaryRoot()
        let file = root.appendingPathComponent("files/changing.txt")
        try FileManager.default.createDirectory(
            at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
        try Data("first".utf8).write(to: file)
        try await withServer(root: root) { server, _ in
            let first = try await request(server, "files/changing.txt")
            try Data("second, longer".utf8).write(to: file)
            let second = try await request(server, "files/changing.txt")
            #expect(first.body == Data("first".utf8) && second.body == Data("second, longer".utf8))
            #expect(first.headers["etag"] != second.headers["etag"])
            let stale = try await request(
                server, "files/changing.txt", headers: ["Range": "bytes=0-1", "If-Range": first.headers["etag"] ?? ""])
            #expect(stale.status == 200 && stale.body == Data("second, longer".utf8))
        }
    }

    @Test func filesLargerThanTheCacheAreStreamedWithRanges() async throws {
        let root = temporaryRoot()
        let file = root.appendingPathComponent("files/large.bin")
        try FileManager.default.createDirectory(
            at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
        let large = Data((0..<(FileCache.maximumFileBytes + 1000)).map { UInt8(truncatingIfNeeded: $0 * 7) })
        try large.write(to: file)
        try await withServer(root: root) { server, _ in
            let whole = try await request(server, "files/large.bin")
            #expect(whole.status == 200 && whole.body == large)
            let tail = try await request(server, "files/large.bin", headers: ["Range": "bytes=-1500"])
            #expect(tail.status == 206 && tail.body == large.suffix(1500))
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
