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

    // MARK: - Idempotency-Key

    private func keyedPost(
        _ server: LoopbackServer, key: String, text: String, mediaIDs: [String] = []
    ) async throws -> Answer {
        try await request(
            server, "posts", method: "POST", body: try JSONEncoder().encode(NewPost(text: text, mediaIDs: mediaIDs)),
            headers: ["Content-Type": "application/json", "Idempotency-Key": key])
    }

    private func allPosts(_ server: LoopbackServer) async throws -> [Post] {
        try decodePosts(try await request(server, "posts").body)
    }

    /// A `POST /posts` with `fields` among its headers, sent byte for byte; the answer as text.
    private func rawPost(_ server: LoopbackServer, fields: String) async throws -> String {
        let port = server.port
        return try await blocking {
            let socket = try RawSocket(port: port)
            defer { socket.close() }
            let body = #"{"text":"raw","mediaIDs":[]}"#
            _ = socket.send(
                "POST /posts HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n\(fields)"
                    + "Content-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n\(body)")
            return String(decoding: socket.receive().bytes, as: UTF8.self)
        }
    }

    @Test func aRepeatedKeyGetsTheFirstPostAndMakesNoOther() async throws {
        try await withServer { server, root in
            let first = try await keyedPost(server, key: "\"k-1\"", text: "once")
            let again = try await keyedPost(server, key: "\"k-1\"", text: "once")
            let bare = try await keyedPost(server, key: "k-1", text: "once")
            #expect(first.status == 201 && again.status == 201 && bare.status == 201)
            #expect(again.body == first.body && bare.body == first.body, "the same post, byte for byte")
            let other = try await keyedPost(server, key: "\"k-2\"", text: "once")
            #expect(other.status == 201)
            let unkeyed = try await postRequest(server, text: "once")
            #expect(unkeyed.status == 201)
            #expect(try await allPosts(server).map(\.id) == [1, 2, 3], "a new key, or none, makes a new post")
            let log = try String(contentsOf: root.appendingPathComponent("posts.jsonl"), encoding: .utf8)
            #expect(log.contains(#""idempotencyKey":"k-1""#))
            #expect(!String(decoding: try await request(server, "posts").body, as: UTF8.self).contains("k-1"))
        }
    }

    @Test func theSameKeyWithAnotherTextOrMediaIs422AndMakesNoPost() async throws {
        try await withServer { server, _ in
            #expect(try await keyedPost(server, key: "\"k\"", text: "first").status == 201)
            for answer in [
                try await keyedPost(server, key: "\"k\"", text: "second"),
                try await keyedPost(server, key: "\"k\"", text: "first", mediaIDs: ["a.jpg"]),
            ] {
                #expect(answer.status == 422)
                #expect(
                    answer.errorMessage?.contains("Idempotency-Key made post 1") == true, "\(answer.errorMessage ?? "")"
                )
            }
            #expect(try await allPosts(server).count == 1)
        }
    }

    @Test func aKeyWhosePostFailedIsNotRemembered() async throws {
        try await withServer { server, _ in
            let unknown = try await keyedPost(server, key: "\"k\"", text: "t", mediaIDs: ["missing.jpg"])
            #expect(unknown.status == 422 && unknown.errorMessage?.contains("unknown media") == true)
            #expect(try await keyedPost(server, key: "\"k\"", text: "t").status == 201)
        }
    }

    @Test func badKeysAre400WithAMessageAndMakeNoPost() async throws {
        try await withServer { server, _ in
            for (key, expected) in [
                (#""""#, "must not be empty"), (String(repeating: "k", count: 10_240), "at most 255 characters"),
                ("\"a\tb\"", "printable ASCII"), ("\"open", "no closing quote"), ("two words", "a space"),
            ] {
                let answer = try await keyedPost(server, key: key, text: "t")
                #expect(answer.status == 400, "\(key.prefix(20))")
                #expect(answer.errorMessage?.hasPrefix("Idempotency-Key ") == true, "\(answer.errorMessage ?? "")")
                #expect(answer.errorMessage?.contains(expected) == true, "\(answer.errorMessage ?? "")")
                #expect((answer.errorMessage?.count ?? 0) < 200, "the message does not repeat the key")
            }
            for fields in [
                "Idempotency-Key:\r\n", "Idempotency-Key: \u{1}k\r\n", "Idempotency-Key: \"k\u{7F}\"\r\n",
                "Idempotency-Key: \"k\u{80}\"\r\n", "Idempotency-Key: \"a\"\r\nIdempotency-Key: \"a\"\r\n",
            ] {
                let answer = try await rawPost(server, fields: fields)
                #expect(answer.hasPrefix("HTTP/1.1 400"), "\(fields.debugDescription): \(answer)")
            }
            #expect(try await rawPost(server, fields: "Idempotency-Key: \"a\"\r\n").hasPrefix("HTTP/1.1 201"))
            #expect(try await allPosts(server).count == 1, "only the good key made a post")
        }
    }

    @Test func concurrentRequestsWithOneKeyMakeOnePost() async throws {
        try await withServer { server, _ in
            let answers = try await withThrowingTaskGroup(of: Answer.self) { group in
                for _ in 0..<8 { group.addTask { try await keyedPost(server, key: "\"same\"", text: "race") } }
                return try await group.reduce(into: [Answer]()) { $0.append($1) }
            }
            #expect(answers.allSatisfy { $0.status == 201 && $0.body == answers[0].body })
            #expect(try await allPosts(server).count == 1)
        }
    }

    @Test func aRestartedServerRemembersTheKeysOfItsPosts() async throws {
        let root = temporaryRoot()
        let first = try await withServer(root: root) { server, _ in
            try await keyedPost(server, key: "\"kept\"", text: "before")
        }
        try await withServer(root: root) { server, _ in
            let again = try await keyedPost(server, key: "\"kept\"", text: "before")
            #expect(again.status == 201 && again.body == first.body)
            #expect(try await keyedPost(server, key: "\"kept\"", text: "after").status == 422)
            #expect(try await allPosts(server).count == 1)
        }
    }

    @Test func theStoreRemembersOnlyItsLatestKeys() async throws {
        let root = temporaryRoot()
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        let log = root.appendingPathComponent("posts.jsonl")
        let legacy = root.appendingPathComponent("posts.json")
        func open() throws -> PostStore { try PostStore.load(log: log, legacy: legacy, media: root, keyCapacity: 2) }
        func key(_ value: String) -> IdempotencyKey { IdempotencyKey(stored: value)! }
        var store = try open()
        for value in ["a", "b", "c"] { _ = try await store.create(NewPost(text: value, mediaIDs: []), key: key(value)) }
        #expect(try await store.create(NewPost(text: "c", mediaIDs: []), key: key("c")).id == 3)
        #expect(try await store.create(NewPost(text: "a", mediaIDs: []), key: key("a")).id == 4, "forgotten")
        store = try open()
        #expect(try await store.create(NewPost(text: "a", mediaIDs: []), key: key("a")).id == 4)
        #expect(try await store.create(NewPost(text: "b", mediaIDs: []), key: key("b")).id == 5, "forgotten")
        #expect(await store.all().count == 5)
    }
}
