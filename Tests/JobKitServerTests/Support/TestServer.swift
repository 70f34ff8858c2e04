import Foundation

@testable import JobKitServer

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// One HTTP answer: status, body and headers (names lowercased).
struct Answer {
    var status: Int
    var body: Data
    var headers: [String: String]

    /// The `error` of a `{"error": "…"}` body, or nil when the body is not that.
    var errorMessage: String? {
        (try? JSONSerialization.jsonObject(with: body) as? [String: Any]).flatMap { $0["error"] as? String }
    }
}

/// Sends one request to `server` through URLSession.
func request(
    _ server: LoopbackServer, _ path: String, method: String = "GET", body: Data? = nil,
    headers: [String: String] = [:]
) async throws -> Answer {
    guard let url = URL(string: path, relativeTo: server.baseURL) else { throw URLError(.badURL) }
    var request = URLRequest(url: url)
    request.httpMethod = method
    request.httpBody = body
    for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
    let (data, response) = try await URLSession.shared.data(for: request)
    guard let http = response as? HTTPURLResponse else { throw URLError(.badServerResponse) }
    var fields: [String: String] = [:]
    for case (let name as String, let value as String) in http.allHeaderFields { fields[name.lowercased()] = value }
    return Answer(status: http.statusCode, body: data, headers: fields)
}

/// A new, empty root folder.
func temporaryRoot() -> URL {
    FileManager.default.temporaryDirectory.appendingPathComponent("jobkit-\(UUID().uuidString)")
}

/// Runs `body` against a server on an ephemeral port, and stops it after.
func withServer<T>(
    root: URL? = nil, maxUploadBytes: Int = 1 << 20, maxPostBytes: Int = 64 << 10,
    _ body: (LoopbackServer, URL) async throws -> T
) async throws -> T {
    let root = root ?? temporaryRoot()
    let server = try await LoopbackServer.start(
        .init(root: root, maxUploadBytes: maxUploadBytes, maxPostBytes: maxPostBytes))
    do {
        let value = try await body(server, root)
        await server.stop()
        return value
    } catch {
        await server.stop()
        throw error
    }
}

/// A post's JSON body with its content type, as clients send it.
func postRequest(_ server: LoopbackServer, text: String, mediaIDs: [String] = []) async throws -> Answer {
    try await request(
        server, "posts", method: "POST", body: try JSONEncoder().encode(NewPost(text: text, mediaIDs: mediaIDs)),
        headers: ["Content-Type": "application/json"])
}
