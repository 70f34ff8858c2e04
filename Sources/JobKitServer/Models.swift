import Foundation
import Hummingbird

/// A published post: its text and the ids of its media, all of which exist on the server.
public struct Post: ResponseCodable, Equatable, Sendable {
    public var id: Int
    public var text: String
    public var mediaIDs: [String]
    public var createdAt: Date
}

/// The body of `POST /posts`.
public struct NewPost: Codable, Sendable {
    public var text: String
    public var mediaIDs: [String]

    public init(text: String, mediaIDs: [String]) {
        self.text = text
        self.mediaIDs = mediaIDs
    }
}

/// What `PUT /media/{name}` and `POST /media` answer.
public struct StoredMedia: ResponseCodable, Equatable, Sendable {
    public var id: String
    public var size: Int
}

/// A product (seed 003).
public struct Product: ResponseCodable, Equatable, Sendable {
    public var id: Int
    public var name: String
    public var price: Double
}

/// The iTunes-style feed of seed 004: `{"feed": {"results": [...]}}`.
public struct MusicFeed: ResponseCodable, Sendable {
    public struct Feed: Codable, Sendable {
        public var results: [Music]
    }

    public struct Music: Codable, Sendable, Equatable {
        public var artistName: String
        public var id: String
        public var releaseDate: String
        public var name: String
        public var kind: String
        public var copyright: String
        public var artistId: String
        public var artworkUrl100: String
    }

    public var feed: Feed
}

/// An error body: `{"error": "..."}`.
struct ErrorBody: ResponseEncodable {
    var error: String
}
