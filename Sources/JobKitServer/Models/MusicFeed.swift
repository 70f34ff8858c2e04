import Foundation
import Hummingbird

/// The iTunes-style feed of the demo's feed scenario: `{"feed": {"results": [...]}}`.
package struct MusicFeed: ResponseCodable, Sendable {
    /// The `feed` object.
    package struct Feed: Codable, Sendable {
        /// The feed's items, newest first.
        package var results: [Music]
    }

    /// One item of the feed, with the iTunes field names.
    package struct Music: Codable, Sendable, Equatable {
        /// The artist's name.
        package var artistName: String
        /// The item's id.
        package var id: String
        /// The release date, `YYYY-MM-DD`.
        package var releaseDate: String
        /// The title.
        package var name: String
        /// The kind of item, such as `album`.
        package var kind: String
        /// The copyright line.
        package var copyright: String
        /// The artist's id.
        package var artistId: String
        /// The URL of a 100-pixel artwork image.
        package var artworkUrl100: String
    }

    /// The feed itself.
    package var feed: Feed
}
