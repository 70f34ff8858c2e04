import Foundation

/// Resources whose versions change, and the ways a server answers: honestly, or ignoring `If-Range`,
/// dropping validators, failing, lying about lengths, cutting the body short or sending too much,
/// sending a content-coded body despite `Accept-Encoding: identity` (the transport decodes it: its
/// length and ranges are not the bytes written), a 200 or 416 that lies about ranges; and through a
/// redirect (which the transport follows) to a mirror with validators of its own, maybe a version
/// behind. A third of the resources serve weak dates: a `Last-Modified` equal to `Date`, the same
/// for every version.
struct SimulatedServer {
    /// One file the server has, in its current version.
    struct Resource {
        var version: Int
        var length: Int
        var hasETag: Bool
    }

    /// One answer: status, headers (lowercased names), the body, and whether the connection drops
    /// after `body` (a truncated transfer); `lie` says what the answer lies about (nil: honest).
    struct Response {
        var status: Int
        var headers: [String: String]
        var body: [UInt8]
        var drops: Bool
        var note: String
        var lie: String?
    }

    private(set) var resources: [String: Resource] = [:]
    /// Answers every request honestly, in full (a schedule's end: what is live must then complete).
    var honest = false
    /// Every version each resource had, by its content: a completed file must be one of them (a
    /// redirect's mirror's versions count as its origin's).
    private var versions: [String: [[UInt8]]] = [:]
    /// The bytes each resource has now (its last version's), by URL: what an answer sends.
    private var current: [String: [UInt8]] = [:]
    /// The resources that redirect now, to their mirror.
    private var redirects: [String: String] = [:]

    /// Whether `bytes` are one whole version of the resource `url` names (or of its mirror).
    func isVersion(_ bytes: [UInt8], of url: String) -> Bool {
        let url = Self.resource(url)
        return versions[url]?.contains(bytes) == true || versions[Self.mirror(of: url)]?.contains(bytes) == true
    }

    /// Keeps `content` as the resource's bytes now, and among its versions.
    private mutating func record(_ content: [UInt8], of url: String) {
        current[url] = content
        if versions[url]?.contains(content) != true { versions[url, default: []].append(content) }
    }

    /// Whether `bytes` begin one version of the resource `url` names (or of its mirror): what a
    /// `.part` of it may hold.
    func isPrefixOfVersion(_ bytes: [UInt8], of url: String) -> Bool {
        let url = Self.resource(url)
        return ((versions[url] ?? []) + (versions[Self.mirror(of: url)] ?? [])).contains { version in
            version.count >= bytes.count
                && version.withUnsafeBytes { whole in
                    bytes.withUnsafeBytes { part in
                        part.isEmpty || memcmp(whole.baseAddress!, part.baseAddress!, part.count) == 0
                    }
                }
        }
    }

    /// The mirror a resource may redirect to: another host, the same file, validators of its own.
    static func mirror(of url: String) -> String { url.replacingOccurrences(of: "://h", with: "://mirror-h") }

    /// The resource starts or stops redirecting to its mirror, which serves its current version or
    /// the one before it.
    mutating func toggleRedirect(_ url: String, random: inout SimulationRandom) {
        guard redirects[url] == nil, let resource = resources[url] else {
            redirects[url] = nil
            return
        }
        let mirror = Self.mirror(of: url)
        let version = random.chance(70) ? resource.version : max(1, resource.version - 1)
        let length = resources[mirror] == nil || random.chance(50) ? resource.length : resources[mirror]!.length
        resources[mirror] = Resource(version: version, length: length, hasETag: random.chance(50))
        record(Self.content(url, version: version, length: length), of: mirror)
        redirects[url] = mirror
    }

    mutating func add(_ url: String, length: Int, hasETag: Bool) {
        resources[url] = Resource(version: 1, length: length, hasETag: hasETag)
        record(Self.content(url, version: 1, length: length), of: url)
    }

    /// The resource changes: a new version, maybe of another length.
    mutating func change(_ url: String, length: Int) {
        guard var resource = resources[url] else { return }
        resource.version += 1
        resource.length = length
        resources[url] = resource
        record(Self.content(url, version: resource.version, length: length), of: url)
    }

    /// The bytes of `url` in `version`: different for every version and position.
    static func content(_ url: String, version: Int, length: Int) -> [UInt8] {
        let url = url.replacingOccurrences(of: "://mirror-h", with: "://h")
        let hash = url.utf8.reduce(UInt64(version) &* 0x100_0000_01B3) { ($0 ^ UInt64($1)) &* 0x100_0000_01B3 }
        // Byte `i` is the hash's byte `i % 8` plus `i`, modulo 256 (`byte(_:of:)`), made eight at a time:
        // the hash plus a word of the bytes `i`, `i + 1`, … `i + 7`, added byte by byte with no carry
        // between them. A plain loop was most of a debug build's time.
        return [UInt8](unsafeUninitializedCapacity: length) { buffer, count in
            let raw = UnsafeMutableRawBufferPointer(buffer)
            var index = 0
            while index + 8 <= length {
                let offsets = 0x0706_0504_0302_0100 &+ UInt64(index & 0xFF) &* 0x0101_0101_0101_0101
                let low = (hash & 0x7F7F_7F7F_7F7F_7F7F) &+ (offsets & 0x7F7F_7F7F_7F7F_7F7F)
                raw.storeBytes(
                    of: (low ^ ((hash ^ offsets) & 0x8080_8080_8080_8080)).littleEndian, toByteOffset: index,
                    as: UInt64.self)
                index += 8
            }
            while index < length {
                buffer[index] = byte(index, of: hash)
                index += 1
            }
            count = length
        }
    }

    /// Byte `index` of the content whose hash is `hash`.
    static func byte(_ index: Int, of hash: UInt64) -> UInt8 {
        UInt8(truncatingIfNeeded: (hash >> UInt64(index % 8 * 8)) &+ UInt64(index))
    }

    /// The resource a URL names: a query (`?sig=2`, a refreshed signed URL) names the same file.
    static func resource(_ url: String) -> String {
        url.split(separator: "?", maxSplits: 1).first.map(String.init) ?? url
    }

    private static func etag(_ version: Int, _ url: String) -> String {
        url.contains("://mirror-") ? "\"m\(version)\"" : "\"v\(version)\""
    }
    /// Whether the resource's dates are weak: served in the second it was written, every version
    /// in that same second (`Last-Modified` equal to `Date`, whatever the version: a date that
    /// proves nothing, which a download must never resume on). A third of the resources.
    private static func servesWeakDates(_ url: String) -> Bool {
        Self.resource(url).utf8.reduce(0) { $0 &+ Int($1) } % 3 == 0
    }

    /// A strong `Last-Modified` per version (the origin's and the mirror's apart), long before
    /// `date(_:)`; or, for a resource that `servesWeakDates`, the same date as its `Date`.
    private static func lastModified(_ version: Int, _ url: String) -> String {
        guard !servesWeakDates(url) else { return httpDate(days: 0) }
        return httpDate(days: version + (url.contains("://mirror-") ? 500 : 0))
    }

    /// The `Date` of the server's answers for `url`.
    private static func date(_ url: String) -> String {
        httpDate(days: servesWeakDates(url) ? 0 : 5000)
    }

    /// An IMF-fixdate `days` days after a fixed day (2020-09-13 12:26:40 GMT, 1,600,000,000 s after
    /// the epoch). Written out by hand: a `DateFormatter` made per answer was most of the simulation's time.
    private static func httpDate(days: Int) -> String {
        let day = 18_518 + days  // days since 1970-01-01, a Thursday
        // Howard Hinnant's civil_from_days.
        let z = day + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let shiftedMonth = (5 * dayOfYear + 2) / 153
        let dayOfMonth = dayOfYear - (153 * shiftedMonth + 2) / 5 + 1
        let month = shiftedMonth < 10 ? shiftedMonth + 3 : shiftedMonth - 9
        let year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
        let weekday = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"][((day % 7) + 7) % 7]
        let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
        let twoDigits = dayOfMonth < 10 ? "0\(dayOfMonth)" : "\(dayOfMonth)"
        return "\(weekday), \(twoDigits) \(months[month - 1]) \(year) 12:26:40 GMT"
    }

    /// What the server answers a request with `headers`, in one of its moods (after the redirect the
    /// transport follows, if the resource redirects now).
    func respond(to url: String, headers: [String: String], random: inout SimulationRandom) -> Response {
        var url = Self.resource(url)
        var redirected = ""
        if let mirror = redirects[url] {
            url = mirror
            redirected = " (redirected)"
        }
        var response = answer(url, headers: headers, random: &random)
        response.note += redirected
        return response
    }

    private func answer(_ url: String, headers: [String: String], random: inout SimulationRandom) -> Response {
        guard let resource = resources[url] else {
            return Response(
                status: 404, headers: [:], body: Array("no such file".utf8), drops: false, note: "404", lie: nil)
        }
        let content = current[url] ?? []
        var validators: [String: String] = [
            "last-modified": Self.lastModified(resource.version, url), "date": Self.date(url),
        ]
        if resource.hasETag { validators["etag"] = Self.etag(resource.version, url) }
        let validatorMatches =
            headers["If-Range"].map { $0 == validators["etag"] || $0 == validators["last-modified"] } ?? true
        var offset: Int?
        if let range = headers["Range"], range.hasPrefix("bytes="), range.hasSuffix("-") {
            offset = Int(range.dropFirst(6).dropLast())
        }
        switch honest ? 99 : random.int(0...99) {
        case 0..<6:
            // Refused (an expired signed URL, say): the URL refresher's to answer, when there is one.
            let status = random.pick([500, 503, 429, 500, 503, 429, 401, 403, 410])
            var failing: [String: String] = [:]
            if random.chance(50) { failing["retry-after"] = random.pick(["1", "0", "-5", "99999999999999999999"]) }
            return Response(
                status: status, headers: failing, body: Array("busy".utf8), drops: false, note: "\(status)", lie: nil)
        case 6..<10:
            // A lying Content-Length.
            let lie = random.pick([
                "-1", "abc", "5000000000000000000", "99999999999999999999", "\(resource.length + 5)",
            ])
            // Half the time the body ends early, cleanly: a length that cannot be read is no "unknown
            // length, read to the end", which would take that prefix for the whole file.
            let body = random.chance(50) ? Array(content.prefix(random.int(0...content.count))) : content
            return Response(
                status: 200, headers: validators.merging(["content-length": lie]) { $1 }, body: body, drops: false,
                note: "200 lying length \(lie), \(body.count) bytes", lie: "Content-Length of \(lie)")
        case 10..<14:
            // Too much: more bytes than announced.
            return Response(
                status: 200, headers: validators.merging(["content-length": "\(resource.length)"]) { $1 },
                body: content + [1, 2, 3], drops: false, note: "200 over-long", lie: "an over-long body")
        case 14..<20 where offset != nil:
            // Ignores If-Range: a range of the current version, whatever the validator.
            let start = min(offset!, resource.length)
            var range = validators
            if random.chance(50) { range["etag"] = nil; range["last-modified"] = nil }
            range["content-range"] = "bytes \(start)-\(max(start, resource.length - 1))/\(resource.length)"
            return Response(
                status: 206, headers: range, body: Array(content[start...]), drops: false,
                note: "206 ignoring If-Range", lie: "If-Range ignored")
        case 20..<23 where offset != nil:
            // A Content-Range that does not start where asked.
            var range = validators
            range["content-range"] = "bytes 0-\(max(0, resource.length - 1))/\(resource.length)"
            return Response(
                status: 206, headers: range, body: content, drops: false, note: "206 from 0", lie: "a range from 0")
        case 23..<26:
            // Gzip despite `Accept-Encoding: identity`: the body written is decoded, its announced
            // length the encoded one; a range of the encoded bytes decodes to something else.
            var coded = validators
            coded["content-encoding"] = "gzip"
            coded["content-length"] = "\(resource.length / 2 + 3)"
            guard let offset, random.chance(60) else {
                return Response(status: 200, headers: coded, body: content, drops: false, note: "200 gzip", lie: nil)
            }
            let start = min(offset, resource.length)
            coded["content-range"] = "bytes \(start)-\(max(start, resource.length - 1))/\(resource.length)"
            return Response(
                status: 206, headers: coded, body: content, drops: false, note: "206 gzip", lie: "a coded range")
        case 26..<28 where resource.length > 1:
            // A 200 that says it is a part of the file (`Content-Range` not from 0), with that part.
            let start = random.int(1...resource.length - 1)
            var partial = validators
            partial["content-range"] = "bytes \(start)-\(resource.length - 1)/\(resource.length)"
            return Response(
                status: 200, headers: partial, body: Array(content[start...]), drops: false,
                note: "200 with Content-Range from \(start)", lie: "a 200 with a part")
        case 28..<30 where offset != nil:
            // A 416 that proves nothing: no validator, maybe no Content-Range.
            var lying: [String: String] = [:]
            if random.chance(50) { lying["content-range"] = "bytes */\(offset!)" }
            return Response(status: 416, headers: lying, body: [], drops: false, note: "416 lying", lie: "a 416")
        default:
            break
        }
        // Honest.
        let drops = !honest && random.chance(12)
        if let offset, validatorMatches {
            guard offset < resource.length else {
                var range = validators
                if random.chance(70) { range["content-range"] = "bytes */\(resource.length)" }
                return Response(status: 416, headers: range, body: [], drops: false, note: "416", lie: nil)
            }
            var range = validators
            range["content-range"] = "bytes \(offset)-\(resource.length - 1)/\(resource.length)"
            range["content-length"] = "\(resource.length - offset)"
            return Response(
                status: 206, headers: range, body: Array(content[offset...]), drops: drops, note: "206", lie: nil)
        }
        var whole = validators
        whole["content-length"] = "\(resource.length)"
        return Response(status: 200, headers: whole, body: content, drops: drops, note: "200", lie: nil)
    }
}
