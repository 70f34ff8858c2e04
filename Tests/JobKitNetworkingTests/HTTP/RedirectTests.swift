import AsyncHTTPClient
import Foundation
import JobKit
import JobKitTestSupport
import Testing

@testable import JobKitNetworking

/// Redirects as a download follows them (issue 31): every `Location` checked, credentials for the
/// first origin only.
@Suite struct RedirectTests {
    /// The client a `DownloadManager` makes: it leaves redirects to `HTTPClientTransfer`. Never
    /// released, so it needs no shutdown.
    static let http = DownloadHTTPClient.make()

    private let origin = URL(string: "http://127.0.0.1:8080/a")!

    @Test func aLocationWithAPortBeyond65535IsRefusedNotFollowed() {
        let step = Redirect.step(status: 302, location: "http://127.0.0.1:70000/y", from: origin, visited: [origin])
        guard case .refuse(let reason) = step else {
            Issue.record("followed: \(step)")
            return
        }
        #expect(reason.contains("70000"))
        #expect(
            Redirect.step(status: 301, location: "ftp://host/y", from: origin, visited: [origin])
                != .follow(URL(string: "ftp://host/y")!))
    }

    @Test func aRelativeLocationIsFollowedAndAnythingElseIsTheAnswer() {
        #expect(
            Redirect.step(status: 307, location: "/b?x=1", from: origin, visited: [origin])
                == .follow(URL(string: "http://127.0.0.1:8080/b?x=1")!))
        #expect(Redirect.step(status: 200, location: "/b", from: origin, visited: [origin]) == .answer)
        #expect(Redirect.step(status: 302, location: nil, from: origin, visited: [origin]) == .answer)
        #expect(Redirect.step(status: 304, location: "/b", from: origin, visited: [origin]) == .answer)
    }

    @Test func aCycleOrMoreThanTenRedirectsAreRefused() {
        let b = URL(string: "http://127.0.0.1:8080/b")!
        guard case .refuse = Redirect.step(status: 302, location: "/a", from: b, visited: [origin, b]) else {
            Issue.record("a cycle was followed")
            return
        }
        let eleven = (0...10).map { URL(string: "http://h/\($0)")! }
        guard case .refuse = Redirect.step(status: 302, location: "/next", from: eleven[10], visited: eleven) else {
            Issue.record("an eleventh redirect was followed")
            return
        }
    }

    @Test func theOriginIsSchemeHostAndPort() {
        #expect(Redirect.isSameOrigin(URL(string: "http://h/a")!, URL(string: "http://H:80/b")!))
        #expect(!Redirect.isSameOrigin(URL(string: "http://h/a")!, URL(string: "https://h/a")!))
        #expect(!Redirect.isSameOrigin(URL(string: "http://h/a")!, URL(string: "http://h:8080/a")!))
        #expect(!Redirect.isSameOrigin(URL(string: "http://h/a")!, URL(string: "http://evil/a")!))
    }

    @Test func userinfoIsBasicAuthPercentDecoded() {
        let basic = { (text: String) in URL(string: text)!.basicAuthorization }
        #expect(basic("http://alice:pw@host/file") == "Basic " + Data("alice:pw".utf8).base64EncodedString())
        #expect(
            basic("http://al%40ce:p%40w%3Ax@host/f") == "Basic " + Data("al@ce:p@w:x".utf8).base64EncodedString())
        #expect(basic("http://alice@host/f") == "Basic " + Data("alice:".utf8).base64EncodedString())
        #expect(basic("http://host/f") == nil)
    }

    // MARK: Through AsyncHTTPClient

    @Test func aURLWithAPortBeyond65535FailsItsDownloadWithoutATrap() async throws {
        let folder = try scratchFolder()
        for text in ["http://127.0.0.1:99999/x", "http://[::1]:99999/x", "http://127.0.0.1:0/x"] {
            let result = await outcome(
                of: Job<URL>.download(
                    from: URL(string: text)!, to: folder.appendingPathComponent("x"),
                    transport: .asyncHTTPClient(Self.http)))
            let error = try #require(result.failureError as? TransportError)
            #expect(error.code == .badURL)
            #expect(error.localizedDescription.contains("is not a number from 1 to 65535"))
        }
    }

    @Test func aRedirectToAPortBeyond65535FailsTheDownloadNamingIt() async throws {
        let server = try ScriptedServer { _, _ in .respond(302, headers: ["Location": "http://127.0.0.1:70000/y"]) }
        defer { server.stop() }
        let destination = try scratchFolder().appendingPathComponent("y")
        let result = await outcome(
            of: Job<URL>.download(from: server.url("x"), to: destination, transport: .asyncHTTPClient(Self.http)))
        let error = try #require(result.failureError as? TransportError)
        #expect(error.code == .badURL)
        #expect(error.localizedDescription.contains("the redirect to http://127.0.0.1:70000/y cannot be followed"))
        #expect(server.requests.count == 1)
        #expect(!exists(destination))
    }

    @Test func aRedirectLoopFailsAsTooManyRedirects() async throws {
        let server = try ScriptedServer { request, _ in
            .respond(302, headers: ["Location": request.path == "/a" ? "/b" : "/a"])
        }
        defer { server.stop() }
        let result = await outcome(
            of: Job<URL>.download(
                from: server.url("a"), to: try scratchFolder().appendingPathComponent("a"),
                transport: .asyncHTTPClient(Self.http)))
        let error = try #require(result.failureError as? TransportError)
        #expect(error.code == .httpTooManyRedirects)
        #expect(server.requests.count == 2)
    }

    @Test func credentialsInTheURLGoAsBasicAuthToTheirOriginOnly() async throws {
        let body = pattern(1000)
        let server = try ScriptedServer { request, _ in
            switch request.path {
            case "/a": return .respond(302, headers: ["Location": "/b"])
            case "/b":
                // Another origin (another host name), the same server.
                let port = request.headers["host"].flatMap { $0.split(separator: ":").last }.map(String.init) ?? ""
                return .respond(302, headers: ["Location": "http://localhost:\(port)/c"])
            default: return .respond(200, body: body)
            }
        }
        defer { server.stop() }
        let url = URL(string: "http://alice:p%40w@127.0.0.1:\(server.port)/a")!
        let destination = try scratchFolder().appendingPathComponent("c")
        _ = try await Job<URL>.download(from: url, to: destination, transport: .asyncHTTPClient(Self.http)).value
        let basic = "Basic " + Data("alice:p@w".utf8).base64EncodedString()
        #expect(server.requests.map(\.path) == ["/a", "/b", "/c"])
        #expect(server.requests.map { $0.headers["authorization"] } == [basic, basic, nil])
        #expect(try Data(contentsOf: destination) == body)
    }

    @Test func aRefusedConnectionFailsAtOnceInOneCleanLine() async throws {
        let closed = try RefusingPort()
        let result = await outcome(
            of: Job<URL>.download(
                from: closed.url("x"), to: try scratchFolder().appendingPathComponent("x"),
                transport: .asyncHTTPClient(Self.http)))
        let error = try #require(result.failureError as? TransportError)
        #expect(error.code == .cannotConnectToHost)
        #expect(
            error.localizedDescription
                == "transfer of \(closed.url("x").absoluteString) failed: the connection to 127.0.0.1:\(closed.port) "
                + "was refused (URLError \(URLError.Code.cannotConnectToHost.rawValue))")
    }
}
