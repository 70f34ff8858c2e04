import Foundation
import JobKit
import JobKitNetworking

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Seed 000 over HTTP: upload every photo and video in parallel, then create the post with their
/// ids — never the post after a failed upload (checked by asking the server).
struct PublishScenario: Sendable {
    var photos: Int
    var videos: Int
    var failUpload: Bool

    struct CreatedPost: Decodable, Sendable {
        var id: Int
        var text: String
        var mediaIDs: [String]
    }

    /// Returns whether the outcome was the expected one: published, or — with `failUpload` — not.
    func run(on backend: DemoBackend) async -> Bool {
        let text = "JobKit demo post \(UUID().uuidString.prefix(8))"
        var media = (1..<photos + 1).map { "photo-\($0).jpg" } + (1..<videos + 1).map { "video-\($0).mov" }
        // The server refuses names with spaces and brackets (400): a real, server-side upload failure.
        if failUpload, !media.isEmpty { media[media.count - 1] = "video (corrupt).mov" }
        backend.print("publish: uploading \(media.count) media in parallel, then the post")
        let uploads = media.enumerated().map { index, name in upload(name, seed: index, on: backend) }
        let publish = backend.traced(
            Job.collect(uploads, maxConcurrent: 4).then { ids in createPost(text, mediaIDs: ids, on: backend) },
            "publish")
        let outcome = await backend.outcome(of: publish)
        switch outcome {
        case .success(let post): backend.print("publish: post \(post.id) published with \(post.mediaIDs.count) media")
        case .failure(let error): backend.print("publish: \(error) — the post was NOT published")
        }
        let onServer = await backend.outcome(
            of: Job<[CreatedPost]>.decode(
                for: URLRequest(url: backend.url("posts")), client: backend.client))
        let isOnServer = (try? onServer.get())?.contains { $0.text == text } ?? false
        backend.print("publish: the server \(isOnServer ? "has" : "does not have") the post")
        let published = (try? outcome.get()) != nil
        return isOnServer == !failUpload && published == !failUpload
    }

    private func upload(_ name: String, seed: Int, on backend: DemoBackend) -> Job<String> {
        let path = name.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed) ?? name
        let data = DemoBackend.bytes(count: 64 * 1024 * (1 + seed % 3), seed: seed)
        let job = Job<HTTPReply>.upload(data: data, to: backend.url("media/\(path)"), client: backend.client)
            .map { _ in
                DispatchQueue.main.async { backend.print("  ✓ \(name)") }
                return name
            }
            .mapError { error in
                DispatchQueue.main.async { backend.print("  ✗ \(name): \(error)") }
                return error
            }
        return backend.traced(job, "upload \(name)")
    }

    private func createPost(_ text: String, mediaIDs: [String], on backend: DemoBackend) -> Job<CreatedPost> {
        var request = URLRequest(url: backend.url("posts"))
        request.httpMethod = "POST"
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        request.httpBody = try? JSONSerialization.data(withJSONObject: ["text": text, "mediaIDs": mediaIDs])
        return backend.traced(Job<CreatedPost>.decode(for: request, client: backend.client), "create post")
    }
}
