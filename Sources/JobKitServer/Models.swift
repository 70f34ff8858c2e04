import Foundation
import Hummingbird

/// A published post: its text and the ids of its media, all of which exist on the server.
public struct Post: ResponseCodable, Equatable, Sendable {
    /// The server-assigned id, 1 for the first post, increasing.
    public var id: Int
    /// The post's text.
    public var text: String
    /// The ids of the post's media, as `StoredMedia.id` gave them.
    public var mediaIDs: [String]
    /// When the server stored the post.
    public var createdAt: Date
}

/// The body of `POST /posts`.
public struct NewPost: Codable, Sendable {
    /// The post's text.
    public var text: String
    /// The ids of already uploaded media; every one must exist on the server.
    public var mediaIDs: [String]

    /// A new post with this text and these media ids.
    public init(text: String, mediaIDs: [String]) {
        self.text = text
        self.mediaIDs = mediaIDs
    }
}

/// What `PUT /media/{name}` and `POST /media` answer.
public struct StoredMedia: ResponseCodable, Equatable, Sendable {
    /// The media's id: the name it was stored under; use it in `NewPost.mediaIDs`.
    public var id: String
    /// Its size in bytes.
    public var size: Int
}

/// A product of the catalogue (the demo's result queue scenario).
public struct Product: ResponseCodable, Equatable, Sendable {
    /// The product's id, as in `GET /products/{id}`.
    public var id: Int
    /// The product's name.
    public var name: String
    /// The product's price.
    public var price: Double
}

/// The iTunes-style feed of the demo's feed scenario: `{"feed": {"results": [...]}}`.
public struct MusicFeed: ResponseCodable, Sendable {
    /// The `feed` object.
    public struct Feed: Codable, Sendable {
        /// The feed's items, newest first.
        public var results: [Music]
    }

    /// One item of the feed, with the iTunes field names.
    public struct Music: Codable, Sendable, Equatable {
        /// The artist's name.
        public var artistName: String
        /// The item's id.
        public var id: String
        /// The release date, `YYYY-MM-DD`.
        public var releaseDate: String
        /// The title.
        public var name: String
        /// The kind of item, such as `album`.
        public var kind: String
        /// The copyright line.
        public var copyright: String
        /// The artist's id.
        public var artistId: String
        /// The URL of a 100-pixel artwork image.
        public var artworkUrl100: String
    }

    /// The feed itself.
    public var feed: Feed
}

/// An error body: `{"error": "..."}`.
struct ErrorBody: ResponseEncodable {
    var error: String
}
