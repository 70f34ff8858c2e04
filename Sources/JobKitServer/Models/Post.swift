import Foundation
import Hummingbird

/// A published post: its text and the ids of its media, all of which exist on the server.
package struct Post: ResponseCodable, Equatable, Sendable {
    /// The server-assigned id, 1 for the first post, increasing.
    package var id: Int
    /// The post's text.
    package var text: String
    /// The ids of the post's media, as `StoredMedia.id` gave them.
    package var mediaIDs: [String]
    /// When the server stored the post.
    package var createdAt: Date
}
