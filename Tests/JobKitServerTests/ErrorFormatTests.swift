import Foundation
import Testing

@testable import JobKitServer

/// One error format, and start failures reported.
@Suite struct ErrorFormatTests {
    @Test func unknownRoutesAre404WithAnErrorBody() async throws {
        try await withServer { server, _ in
            for path in ["nope", "products", "media/a/b", "files"] {
                let answer = try await request(server, path)
                #expect(answer.status == 404, "\(path)")
                #expect(answer.errorMessage != nil, "\(path): \(String(decoding: answer.body, as: UTF8.self))")
            }
            let product = try await request(server, "products/999")
            #expect(product.status == 404 && product.errorMessage == "no such product")
        }
    }

    @Test func wrongMethodsAre405WithAllow() async throws {
        try await withServer { server, _ in
            let posts = try await request(server, "posts", method: "DELETE")
            #expect(posts.status == 405 && posts.errorMessage != nil)
            #expect(Set((posts.headers["allow"] ?? "").components(separatedBy: ", ")) == ["GET", "HEAD", "POST"])
            let media = try await request(server, "media/x.bin", method: "GET")
            #expect(media.status == 405 && media.headers["allow"] == "PUT")
        }
    }

    @Test func aPortInUseThrowsCannotListenAtOnce() async throws {
        _ = try await withServer { server, _ in
            await #expect(
                throws: LoopbackServerError.cannotListen(
                    host: "127.0.0.1", port: server.port, reason: "address already in use")
            ) {
                _ = try await LoopbackServer.start(.init(root: temporaryRoot(), port: server.port))
            }
        }
        let error = LoopbackServerError.cannotListen(host: "127.0.0.1", port: 8080, reason: "address already in use")
        #expect(error.localizedDescription == "cannot listen on 127.0.0.1:8080: address already in use")
    }

    @Test func aRootThatIsAFileIsReported() async throws {
        let file = temporaryRoot()
        try Data("x".utf8).write(to: file)
        await #expect {
            _ = try await LoopbackServer.start(.init(root: file))
        } throws: { error in
            guard case .cannotOpenRoot(let path, _) = error as? LoopbackServerError else { return false }
            return path == file.path
        }
    }
}
