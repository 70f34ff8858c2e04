import Dispatch
import Foundation
import JobKit
import JobKitNetworking

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Seed 004's error type, with a readable description.
enum APIError: Error, CustomStringConvertible {
    case error(String)
    case errorURL

    var description: String {
        switch self {
        case .error(let message): "API error: \(message)"
        case .errorURL: "API error: bad URL"
        }
    }
}
