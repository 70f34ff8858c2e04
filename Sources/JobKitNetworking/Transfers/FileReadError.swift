import Foundation

/// A file to upload that cannot be read.
public struct FileReadError: Error, LocalizedError, CustomStringConvertible {
    /// The path of the file that cannot be read.
    public let path: String

    public var errorDescription: String? { "cannot read \(path): no such readable file" }
    public var description: String { errorDescription! }
}
