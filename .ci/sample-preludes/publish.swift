// Stand-ins for the README's "Publish a post after its media" sample.
import Foundation

struct Media: Sendable {
    var name: String
    var data: Data
}

struct Post: Sendable {
    var text: String
    var media: [Media]
}

final class Uploader: Sendable {
    func upload(_ media: Media, then done: @escaping @Sendable ((any Error)?) -> Void) { done(nil) }
    func create(_ post: Post, then done: @escaping @Sendable ((any Error)?) -> Void) { done(nil) }
}

let post = Post(text: "Hello", media: [])
let uploader = Uploader()
func showPublished() {}
func showError(_ error: any Error) {}
let photo = Media(name: "photo-1.jpg", data: Data())
