import Foundation
import Hummingbird
import JobKit
import NIOCore

/// The format of the posts log: one JSON object and a newline per post — the post's fields, and
/// `idempotencyKey` for a post made with one.
enum PostLog {
    /// One line: a post, and the idempotency key it was made with (which `GET /posts` never shows).
    struct Entry: Codable, Equatable {
        var post: Post
        var idempotencyKey: String?

        init(post: Post, idempotencyKey: String? = nil) {
            self.post = post
            self.idempotencyKey = idempotencyKey
        }

        private enum CodingKeys: String, CodingKey {
            case idempotencyKey
        }

        init(from decoder: any Decoder) throws {
            post = try Post(from: decoder)
            idempotencyKey = try decoder.container(keyedBy: CodingKeys.self).decodeIfPresent(
                String.self, forKey: .idempotencyKey)
        }

        func encode(to encoder: any Encoder) throws {
            try post.encode(to: encoder)
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encodeIfPresent(idempotencyKey, forKey: .idempotencyKey)
        }
    }

    static func line(for entry: Entry) throws -> Data {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        encoder.outputFormatting = .sortedKeys
        return try encoder.encode(entry) + Data([UInt8(ascii: "\n")])
    }

    /// The entries of the log's whole lines, and the length of those lines: a last line without a newline is
    /// not counted (it is a write that never finished). A whole line that is not a post throws.
    static func decode(_ data: Data, path: String) throws -> (entries: [Entry], completeLength: Int) {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        var posts: [Entry] = []
        var start = data.startIndex
        var number = 0
        while let newline = data[start...].firstIndex(of: UInt8(ascii: "\n")) {
            number += 1
            let line = data[start..<newline]
            if !line.allSatisfy({ $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "\r") }) {
                guard let post = try? decoder.decode(Entry.self, from: line) else {
                    throw LoopbackServerError.corruptPosts(path: path, line: number)
                }
                posts.append(post)
            }
            start = newline + 1
        }
        return (posts, start - data.startIndex)
    }
}
