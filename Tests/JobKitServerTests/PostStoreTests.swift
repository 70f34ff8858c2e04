import Foundation
import Testing

@testable import JobKitServer

/// Posts: an append-only log, JSON bodies only, a size limit.
@Suite struct PostStoreTests {
    private func decodePosts(_ data: Data) throws -> [Post] {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        return try decoder.decode([Post].self, from: data)
    }

    private func inode(_ url: URL) throws -> Int? {
        try FileManager.default.attributesOfItem(atPath: url.path)[.systemFileNumber] as? Int
    }

    @Test func eachPostAppendsOneLineAndRewritesNothing() async throws {
        try await withServer { server, root in
            let log = root.appendingPathComponent("posts.jsonl")
            #expect(try await postRequest(server, text: "first").status == 201)
            let before = try Data(contentsOf: log)
            let node = try inode(log)
            #expect(try await postRequest(server, text: "second\nline").status == 201)
            let after = try Data(contentsOf: log)
            let nodeAfter = try inode(log)
            #expect(after.prefix(before.count) == before && nodeAfter == node)
            #expect(after.split(separator: UInt8(ascii: "\n")).count == 2, "a newline in a text is escaped")
        }
    }

    @Test func aTornLastLineIsCutOffOnRestart() async throws {
        let root = temporaryRoot()
        try await withServer(root: root) { server, _ in
            _ = try await postRequest(server, text: "kept")
        }
        let log = root.appendingPathComponent("posts.jsonl")
        let whole = try Data(contentsOf: log)
        let handle = try FileHandle(forWritingTo: log)
        try handle.seekToEnd()
        try handle.write(contentsOf: Data(#"{"createdAt":"2026-11-23T05:36:58Z","id":2,"te"#.utf8))
        try handle.close()
        try await withServer(root: root) { server, _ in
            #expect(try decodePosts(try await request(server, "posts").body).map(\.text) == ["kept"])
            #expect(try Data(contentsOf: log) == whole, "the torn line is truncated away")
            let next = try await postRequest(server, text: "next")
            #expect(try decodePosts(try await request(server, "posts").body).map(\.id) == [1, 2])
            #expect(next.status == 201)
        }
    }

    @Test func aCorruptWholeLineIsReportedWithItsNumber() async throws {
        let root = temporaryRoot()
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        let log = root.appendingPathComponent("posts.jsonl")
        try Data(
            (#"{"createdAt":"2026-11-23T05:36:58Z","id":1,"mediaIDs":[],"text":"a"}"# + "\nnot json\n").utf8
        ).write(to: log)
        await #expect(throws: LoopbackServerError.corruptPosts(path: log.path, line: 2)) {
            _ = try await LoopbackServer.start(.init(root: root))
        }
    }

    @Test func aLogWhoseIdsAreExhaustedRefusesPostsWithoutATrap() async throws {
        let root = temporaryRoot()
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        try Data(
            (#"{"createdAt":"2026-11-23T05:36:58Z","id":\#(Int.max),"mediaIDs":[],"text":"last"}"# + "\n").utf8
        ).write(to: root.appendingPathComponent("posts.jsonl"))
        try await withServer(root: root) { server, _ in
            let answer = try await postRequest(server, text: "one more")
            #expect(answer.status == 500 && answer.errorMessage?.contains("exhausted") == true)
            #expect(try await request(server, "posts").status == 200)
        }
    }

    @Test func postsOfTheFormerJSONArrayAreImported() async throws {
        let root = temporaryRoot()
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        try Data(#"[{"createdAt":"2026-11-23T05:36:58Z","id":4,"mediaIDs":[],"text":"old"}]"#.utf8)
            .write(to: root.appendingPathComponent("posts.json"))
        try await withServer(root: root) { server, _ in
            _ = try await postRequest(server, text: "new")
            let posts = try decodePosts(try await request(server, "posts").body)
            #expect(posts.map(\.text) == ["old", "new"] && posts.map(\.id) == [4, 5])
        }
    }

    @Test func onlyJSONBodiesWithinTheLimitAreAccepted() async throws {
        try await withServer(maxPostBytes: 1000) { server, _ in
            let body = try JSONEncoder().encode(NewPost(text: "hi", mediaIDs: []))
            let plain = try await request(
                server, "posts", method: "POST", body: body, headers: ["Content-Type": "text/plain"])
            #expect(plain.status == 415 && plain.errorMessage?.contains("application/json") == true)
            let none = try await request(server, "posts", method: "POST", body: body, headers: ["Content-Type": ""])
            #expect(none.status == 415)
            let large = try await postRequest(server, text: String(repeating: "x", count: 5000))
            #expect(large.status == 413 && large.errorMessage?.contains("1000 bytes") == true)
            let wrong = try await request(
                server, "posts", method: "POST", body: Data("{\"text\": 5}".utf8),
                headers: ["Content-Type": "application/json; charset=utf-8"])
            #expect(wrong.status == 400 && wrong.errorMessage?.contains("expected") == true)
            #expect(PostRoutes.isJSON("application/vnd.api+json") && !PostRoutes.isJSON("text/json+html"))
        }
    }
}
