import Foundation
import Testing

@testable import JobKitServer

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The server over real HTTP on an ephemeral loopback port.
@Suite struct LoopbackServerTests {
    @Test func pathTraversalAndOddNamesAreRejected() async throws {
        try await withServer { server, root in
            for name in ["..", ".hidden", "a%2Fb", "..%2F..%2Fetc", "semi;colon", "sp%20ace"] {
                let response = try await request(server, "media/\(name)", method: "PUT", body: Data("x".utf8))
                #expect([400, 404].contains(response.status), "\(name) → \(response.status)")
            }
            #expect(!FileManager.default.fileExists(atPath: root.appendingPathComponent("etc").path))
            #expect(MediaRoutes.isValid("photo-1.jpg") && !MediaRoutes.isValid("../x") && !MediaRoutes.isValid("/abs"))
        }
    }

    @Test func oversizedUploadsAreRejected() async throws {
        try await withServer(maxUploadBytes: 1024) { server, root in
            let response = try await request(server, "media/big.bin", method: "PUT", body: Data(count: 4096))
            #expect(response.status == 413)
            #expect(!FileManager.default.fileExists(atPath: root.appendingPathComponent("media/big.bin").path))
        }
    }

    @Test func postsSurviveARestartAndUnknownMediaIs422() async throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("jobkit-\(UUID().uuidString)")
        try await withServer(root: root) { server, _ in
            let unknownMedia = try await postRequest(server, text: "hello", mediaIDs: ["p1.jpg"]).status
            let upload = try await request(server, "media/p1.jpg", method: "PUT", body: Data("jpeg".utf8)).status
            let created = try await postRequest(server, text: "hello", mediaIDs: ["p1.jpg"]).status
            #expect(unknownMedia == 422)
            #expect(upload == 201)
            #expect(created == 201)
        }
        try await withServer(root: root) { server, _ in
            let decoder = JSONDecoder()
            decoder.dateDecodingStrategy = .iso8601
            let posts = try decoder.decode([Post].self, from: try await request(server, "posts").body)
            #expect(posts.map(\.text) == ["hello"])
            #expect(posts.first?.mediaIDs == ["p1.jpg"])
            let one = try await request(server, "posts/\(posts.first?.id ?? 0)")
            #expect(one.status == 200)
            #expect(try decoder.decode(Post.self, from: one.body) == posts.first)
            #expect(try await request(server, "posts/999").status == 404)
            #expect(try await request(server, "posts/x").status == 404)
        }
    }

    @Test func hundredConcurrentUploadsAreAllStored() async throws {
        try await withServer { server, root in
            try await withThrowingTaskGroup(of: Int.self) { group in
                for index in 0..<100 {
                    group.addTask {
                        try await request(
                            server, "media/m\(index).bin", method: "PUT",
                            body: Data(repeating: UInt8(index), count: 1000 + index)
                        ).status
                    }
                }
                for try await status in group { #expect(status == 201) }
            }
            for index in 0..<100 {
                let data = try Data(contentsOf: root.appendingPathComponent("media/m\(index).bin"))
                #expect(data == Data(repeating: UInt8(index), count: 1000 + index))
            }
        }
    }

    @Test func filesAreServedWithRangeAndContentLength() async throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("jobkit-\(UUID().uuidString)")
        try FileManager.default.createDirectory(
            at: root.appendingPathComponent("files"), withIntermediateDirectories: true)
        let bytes = Data((0..<10_000).map { UInt8($0 % 251) })
        try bytes.write(to: root.appendingPathComponent("files/blob.bin"))
        try await withServer(root: root) { server, _ in
            let whole = try await request(server, "files/blob.bin")
            #expect(whole.status == 200 && whole.body == bytes)
            #expect(whole.headers["content-length"] == "10000")
            let part = try await request(server, "files/blob.bin", headers: ["Range": "bytes=100-199"])
            #expect(part.status == 206)
            #expect(part.body == bytes[100..<200])
        }
    }

    @Test func productsFeedAndInjectedFaults() async throws {
        try await withServer { server, _ in
            let product = try JSONDecoder().decode(Product.self, from: try await request(server, "products/7").body)
            #expect(product.id == 7)
            let missing = try await request(server, "products/999").status
            #expect(missing == 404)
            let feed = try JSONDecoder().decode(MusicFeed.self, from: try await request(server, "feed?limit=3").body)
            #expect(feed.feed.results.count == 3)
            server.faults.failNext(1, status: 429, retryAfterSeconds: 2)
            let limited = try await request(server, "feed")
            #expect(limited.status == 429 && limited.headers["retry-after"] == "2")
            let recovered = try await request(server, "feed").status
            let injected = try await request(server, "feed", headers: ["X-Fault-Status": "503"]).status
            #expect(recovered == 200)
            #expect(injected == 503)
            await #expect(throws: (any Error).self) {
                _ = try await request(server, "feed", headers: ["X-Fault-Drop": "1"])
            }
        }
    }
}
