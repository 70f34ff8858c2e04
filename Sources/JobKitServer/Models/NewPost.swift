import Foundation
import Hummingbird

/// The body of `POST /posts`.
package struct NewPost: Codable, Sendable {
    /// The post's text.
    package var text: String
    /// The ids of already uploaded media; every one must exist on the server.
    package var mediaIDs: [String]

    /// A new post with this text and these media ids.
    package init(text: String, mediaIDs: [String]) {
        self.text = text
        self.mediaIDs = mediaIDs
    }
}
