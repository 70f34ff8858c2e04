import Foundation
import Hummingbird

/// What `PUT /media/{name}` and `POST /media` answer.
package struct StoredMedia: ResponseCodable, Equatable, Sendable {
    /// The media's id: the name it was stored under; use it in `NewPost.mediaIDs`.
    package var id: String
    /// Its size in bytes.
    package var size: Int
}
