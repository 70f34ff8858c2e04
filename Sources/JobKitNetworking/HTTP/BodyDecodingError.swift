import Foundation

/// A body that did not decode; `path` names the field that failed, like `feed.results[2].name`.
public struct BodyDecodingError: Error, LocalizedError, CustomStringConvertible {
    /// The name of the type that was being decoded.
    public let type: String
    /// Where decoding failed, as a path from the root: `feed.results[2].name`.
    public let path: String
    /// Why, in words: a missing key, a type mismatch, corrupt data.
    public let reason: String

    init(_ error: any Error, decoding type: Any.Type) {
        self.type = String(describing: type)
        let (context, kind): (DecodingError.Context?, String) =
            switch error as? DecodingError {
            case .keyNotFound(let key, let context)?: (context, "missing key \(key.stringValue)")
            case .typeMismatch(_, let context)?: (context, "type mismatch")
            case .valueNotFound(_, let context)?: (context, "missing value")
            case .dataCorrupted(let context)?: (context, "data corrupted")
            default: (nil, "\(error)")
            }
        var codingPath = context?.codingPath ?? []
        if case .keyNotFound(let key, _)? = error as? DecodingError { codingPath.append(key) }
        path = codingPath.reduce(into: "") { path, key in
            if let index = key.intValue {
                path += "[\(index)]"
            } else {
                path += (path.isEmpty ? "" : ".") + key.stringValue
            }
        }
        reason = [kind, context?.debugDescription].compactMap { $0 }.joined(separator: ": ")
    }

    public var errorDescription: String? { description }

    public var description: String {
        "could not decode \(type) at \(path.isEmpty ? "the top level" : path): \(reason)"
    }
}

/// The name `BodyDecodingError` had before 0.2: kept so that code written against it still builds.
public typealias DecodingFailure = BodyDecodingError
