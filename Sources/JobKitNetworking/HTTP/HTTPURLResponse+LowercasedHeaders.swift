import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

extension HTTPURLResponse {
    /// The header fields, names in lower case.
    var lowercasedHeaders: [String: String] {
        var headers: [String: String] = [:]
        for (name, value) in allHeaderFields {
            if let name = name as? String, let value = value as? String { headers[name.lowercased()] = value }
        }
        return headers
    }
}
