// Stand-ins for the README's networking sample: the server, the post and its media, and the
// request that creates a post.
import Foundation
import JobKit

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

struct Media: Sendable {
    let name: String
    let data: Data
}

struct Post: Sendable {
    let text: String
    let media: [Media]
}

struct CreatedPost: Decodable, Sendable {
    let id: Int
}

let server = URL(string: "http://127.0.0.1:8080")!
let post = Post(text: "Hello", media: [Media(name: "a.jpg", data: Data([1, 2, 3]))])

func createPostRequest(text: String, mediaIDs: [String]) -> URLRequest {
    var request = URLRequest(url: server.appending(path: "posts"))
    request.httpMethod = "POST"
    request.httpBody = try? JSONEncoder().encode(["text": text])
    return request
}
