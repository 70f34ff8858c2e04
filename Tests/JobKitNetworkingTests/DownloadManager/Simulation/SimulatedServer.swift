import Foundation

/// Resources whose versions change, and the ways a server answers: honestly, or ignoring `If-Range`,
/// dropping validators, failing, lying about lengths, cutting the body short or sending too much.
struct SimulatedServer {
    /// One file the server has, in its current version.
    struct Resource {
        var version: Int
        var length: Int
        var hasETag: Bool
    }

    /// One answer: status, headers (lowercased names), the body, and whether the connection drops
    /// after `body` (a truncated transfer).
    struct Response {
        var status: Int
        var headers: [String: String]
        var body: [UInt8]
        var drops: Bool
        var note: String
    }

    private(set) var resources: [String: Resource] = [:]
    /// Every version each resource had, by its content: a completed file must be one of them.
    private(set) var versions: [String: Set<[UInt8]>] = [:]

    mutating func add(_ url: String, length: Int, hasETag: Bool) {
        resources[url] = Resource(version: 1, length: length, hasETag: hasETag)
        versions[url, default: []].insert(Self.content(url, version: 1, length: length))
    }

    /// The resource changes: a new version, maybe of another length.
    mutating func change(_ url: String, length: Int) {
        guard var resource = resources[url] else { return }
        resource.version += 1
        resource.length = length
        resources[url] = resource
        versions[url, default: []].insert(Self.content(url, version: resource.version, length: length))
    }

    /// The bytes of `url` in `version`: different for every version and position.
    static func content(_ url: String, version: Int, length: Int) -> [UInt8] {
        let hash = url.utf8.reduce(UInt64(version) &* 0x100_0000_01B3) { ($0 ^ UInt64($1)) &* 0x100_0000_01B3 }
        return (0..<length).map { index in UInt8(truncatingIfNeeded: (hash >> UInt64(index % 8 * 8)) &+ UInt64(index)) }
    }

    /// The resource a URL names: a query (`?sig=2`, a refreshed signed URL) names the same file.
    static func resource(_ url: String) -> String {
        url.split(separator: "?", maxSplits: 1).first.map(String.init) ?? url
    }

    private static func etag(_ version: Int) -> String { "\"v\(version)\"" }
    private static func lastModified(_ version: Int) -> String { "Day \(version)" }

    /// What the server answers a request with `headers`, in one of its moods.
    func respond(to url: String, headers: [String: String], random: inout SimulationRandom) -> Response {
        let url = Self.resource(url)
        guard let resource = resources[url] else {
            return Response(status: 404, headers: [:], body: Array("no such file".utf8), drops: false, note: "404")
        }
        let content = Self.content(url, version: resource.version, length: resource.length)
        var validators: [String: String] = ["last-modified": Self.lastModified(resource.version)]
        if resource.hasETag { validators["etag"] = Self.etag(resource.version) }
        let validatorMatches =
            headers["If-Range"].map { $0 == validators["etag"] || $0 == validators["last-modified"] } ?? true
        var offset: Int?
        if let range = headers["Range"], range.hasPrefix("bytes="), range.hasSuffix("-") {
            offset = Int(range.dropFirst(6).dropLast())
        }
        switch random.int(0...99) {
        case 0..<6:
            let status = random.pick([500, 503, 429])
            var failing: [String: String] = [:]
            if random.chance(50) { failing["retry-after"] = random.pick(["1", "0", "-5", "99999999999999999999"]) }
            return Response(status: status, headers: failing, body: Array("busy".utf8), drops: false, note: "\(status)")
        case 6..<10:
            // A lying Content-Length.
            let lie = random.pick(["-1", "abc", "5000000000000000000", "\(resource.length + 5)"])
            return Response(
                status: 200, headers: validators.merging(["content-length": lie]) { $1 }, body: content, drops: false,
                note: "200 lying length \(lie)")
        case 10..<14:
            // Too much: more bytes than announced.
            return Response(
                status: 200, headers: validators.merging(["content-length": "\(resource.length)"]) { $1 },
                body: content + [1, 2, 3], drops: false, note: "200 over-long")
        case 14..<20 where offset != nil:
            // Ignores If-Range: a range of the current version, whatever the validator.
            let start = min(offset!, resource.length)
            var range = validators
            if random.chance(50) { range["etag"] = nil; range["last-modified"] = nil }
            range["content-range"] = "bytes \(start)-\(max(start, resource.length - 1))/\(resource.length)"
            return Response(
                status: 206, headers: range, body: Array(content[start...]), drops: false,
                note: "206 ignoring If-Range")
        case 20..<23 where offset != nil:
            // A Content-Range that does not start where asked.
            var range = validators
            range["content-range"] = "bytes 0-\(max(0, resource.length - 1))/\(resource.length)"
            return Response(status: 206, headers: range, body: content, drops: false, note: "206 from 0")
        default:
            break
        }
        // Honest.
        let drops = random.chance(12)
        if let offset, validatorMatches {
            guard offset < resource.length else {
                var range = validators
                if random.chance(70) { range["content-range"] = "bytes */\(resource.length)" }
                return Response(status: 416, headers: range, body: [], drops: false, note: "416")
            }
            var range = validators
            range["content-range"] = "bytes \(offset)-\(resource.length - 1)/\(resource.length)"
            range["content-length"] = "\(resource.length - offset)"
            return Response(status: 206, headers: range, body: Array(content[offset...]), drops: drops, note: "206")
        }
        var whole = validators
        whole["content-length"] = "\(resource.length)"
        return Response(status: 200, headers: whole, body: content, drops: drops, note: "200")
    }
}
