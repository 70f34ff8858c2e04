import Foundation
import Hummingbird

/// An error body: `{"error": "..."}`.
struct ErrorBody: ResponseEncodable {
    var error: String
}
