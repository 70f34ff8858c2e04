import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import NIOSSL

/// The file name a server suggests in `Content-Disposition` (RFC 6266), for `jobkit download
/// --content-disposition`. What it returns is the server's text, decoded, not yet a safe name: the
/// caller passes it through its name rule (the CLI's `DownloadNaming`).
package enum ContentDisposition {
    /// The file name in a `Content-Disposition` value: `filename*=UTF-8''…` (percent-encoded UTF-8,
    /// preferred) or else `filename="…"` (a quoted string, backslash escapes) or `filename=token`;
    /// nil when there is neither, or the extended one is of another charset and there is no plain one.
    /// Only the last path component is kept (after any `/` or `\`): a server names a file, not where
    /// it goes.
    package static func fileName(_ value: String) -> String? {
        var plain: String?
        var extended: String?
        for parameter in parameters(value.prefix(8_192)) {
            switch parameter.name {
            case "filename*": if extended == nil { extended = decodeExtended(parameter.value) }
            case "filename": if plain == nil { plain = parameter.value }
            default: continue
            }
        }
        guard let name = extended ?? plain else { return nil }
        let last = name.split(omittingEmptySubsequences: false, whereSeparator: { $0 == "/" || $0 == "\\" }).last
        return last.map(String.init)
    }

    /// The parameters after the disposition type, names lowercased, quoted values unquoted.
    private static func parameters(_ text: Substring) -> [(name: String, value: String)] {
        var result: [(name: String, value: String)] = []
        var rest = text.drop(while: { $0 != ";" })
        while let semicolon = rest.firstIndex(of: ";") {
            rest = rest[rest.index(after: semicolon)...].drop(while: { $0 == " " || $0 == "\t" })
            guard let equals = rest.firstIndex(of: "=") else { break }
            let name = rest[..<equals].trimmingCharacters(in: .whitespaces).lowercased()
            rest = rest[rest.index(after: equals)...].drop(while: { $0 == " " || $0 == "\t" })
            var value = ""
            if rest.first == "\"" {
                rest = rest.dropFirst()
                var escaped = false
                while let character = rest.first {
                    rest = rest.dropFirst()
                    if escaped {
                        // Only `\"` and `\\` are escapes in practice: a Windows path keeps its separators.
                        if character != "\"" && character != "\\" { value.append("\\") }
                        value.append(character)
                        escaped = false
                    } else if character == "\\" {
                        escaped = true
                    } else if character == "\"" {
                        break
                    } else {
                        value.append(character)
                    }
                }
                rest = rest.drop(while: { $0 != ";" })
            } else {
                let end = rest.firstIndex(of: ";") ?? rest.endIndex
                value = rest[..<end].trimmingCharacters(in: .whitespaces)
                rest = rest[end...]
            }
            result.append((name, value))
        }
        return result
    }

    /// RFC 8187's `charset'language'percent-encoded`, for UTF-8 only (what RFC 6266 asks senders to use).
    private static func decodeExtended(_ value: String) -> String? {
        let parts = value.split(separator: "'", maxSplits: 2, omittingEmptySubsequences: false)
        guard parts.count == 3, parts[0].lowercased() == "utf-8" else { return nil }
        return String(parts[2]).removingPercentEncoding
    }

    /// The `Content-Disposition` values of `requests`' answers, in order (nil: none), asked at most `width` at a
    /// time through one client made for them (the downloads' configuration, with their `tls` trust and
    /// `httpVersion`) and shut down after.
    package static func probe(
        _ requests: [(url: URL, headers: [(name: String, value: String)])], width: Int,
        tls: TLSConfiguration? = nil, httpVersion: HTTPClient.Configuration.HTTPVersion = .automatic
    ) async -> [String?] {
        guard !requests.isEmpty else { return [] }
        let client = DownloadHTTPClient.make(tls: tls, httpVersion: httpVersion)
        var names = [String?](repeating: nil, count: requests.count)
        await withTaskGroup(of: (Int, String?).self) { group in
            var next = 0
            func startNext() {
                guard next < requests.count else { return }
                let index = next
                next += 1
                group.addTask {
                    (index, await probe(requests[index].url, headers: requests[index].headers, client: client))
                }
            }
            for _ in 0..<max(1, width) { startNext() }
            while let (index, name) = await group.next() {
                names[index] = name
                startNext()
            }
        }
        try? await client.shutdown()
        return names
    }

    /// Asks the server for `url`'s `Content-Disposition` (its value, for `fileName(_:)`): a `GET` of its first byte (`Range: bytes=0-0`, so
    /// a signed URL valid for GET works and little is sent) with `headers`, through `client`; the
    /// body is not read. nil when the server sends none, answers an error, or does not answer
    /// within `timeout`. Redirects are followed as a download follows them (`Redirect`: each
    /// `Location` checked by `DownloadURLCheck`, credentials for the first origin only); a URL that
    /// check refuses is never asked (nil). The URL's `user:password@` is sent as Basic auth.
    package static func probe(
        _ url: URL, headers: [(name: String, value: String)], client: HTTPClient, timeout: Duration = .seconds(30)
    ) async -> String? {
        guard DownloadURLCheck.problem(with: url) == nil else { return nil }
        var fields = HTTPHeaders()
        for (name, value) in headers { fields.add(name: name, value: value) }
        if let authorization = url.basicAuthorization, !fields.contains(name: "Authorization") {
            fields.add(name: "Authorization", value: authorization)
        }
        fields.replaceOrAdd(name: "Range", value: "bytes=0-0")
        fields.replaceOrAdd(name: "Accept-Encoding", value: "identity")
        let deadline = NIODeadline.now() + .seconds(timeout.components.seconds)
        var current = url
        var visited = [url]
        while true {
            var request = HTTPClientRequest(url: current.absoluteString)
            request.headers = fields
            guard let response = try? await client.execute(request, deadline: deadline) else { return nil }
            let status = Int(response.status.code)
            switch Redirect.step(
                status: status, location: response.headers.first(name: "location"), from: current, visited: visited)
            {
            case .answer:
                guard (200..<300).contains(status) else { return nil }
                return response.headers.first(name: "content-disposition")
            case .refuse:
                return nil
            case .follow(let target):
                if !Redirect.isSameOrigin(current, target) {
                    for name in Redirect.originBoundHeaders { fields.remove(name: name) }
                }
                visited.append(target)
                current = target
            }
        }
    }
}
