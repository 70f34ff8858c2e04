// Stand-ins for "Publishing a post after its media": the uploader and the jobs of the first block.
import Foundation
import JobKit

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

extension Job where Value == Void {
    static func uploading(_ media: Media, using uploader: Uploader) -> Job {
        .wrapping { done in uploader.upload(media, then: done) }
    }

    static func creating(_ post: Post, using uploader: Uploader) -> Job {
        .wrapping { done in uploader.create(post, then: done) }
    }
}

let post = Post(text: "Hello", media: [])
let uploader = Uploader()
