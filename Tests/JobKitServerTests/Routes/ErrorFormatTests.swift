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

    @Test func unparsableRequestsAre400WithAnErrorBody() async throws {
        try await withServer { server, _ in
            let port = server.port
            let answer = try await blocking {
                let socket = try RawSocket(port: port)
                defer { socket.close() }
                _ = socket.send(
                    "GET /feed HTTP/1.1\r\nHost: x\r\nX-Long: \(String(repeating: "a", count: 100_000))\r\n\r\n")
                return String(decoding: socket.receive().bytes, as: UTF8.self)
            }
            #expect(answer.hasPrefix("HTTP/1.1 400"))
            #expect(answer.hasSuffix(#"{"error":"malformed HTTP request"}"#), "\(answer)")
        }
    }

    @Test func anUploadPastTheLimitClosesTheConnectionInsteadOfReadingOn() async throws {
        try await withServer(maxUploadBytes: 1024) { server, _ in
            let port = server.port
            let answer = try await blocking {
                let socket = try RawSocket(port: port)
                defer { socket.close() }
                _ = socket.send("PUT /media/big.bin HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n")
                let chunk = String(repeating: "z", count: 4096)
                _ = socket.send("1000\r\n\(chunk)\r\n")
                // No final chunk is sent: only the server closing the connection ends this read.
                return socket.receive()
            }
            let text = String(decoding: answer.bytes, as: UTF8.self)
            #expect(text.hasPrefix("HTTP/1.1 413") && !answer.timedOut, "\(text)")
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
