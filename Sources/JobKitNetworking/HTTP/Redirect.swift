import Foundation

/// The redirects a download follows itself, each `Location` checked (`DownloadURLCheck`) before a
/// transport sees it: what AsyncHTTPClient would follow (301, 302, 303, 307, 308 with a
/// `Location`), at most `limit` of them, never in a cycle, and never carrying credentials to
/// another origin.
enum Redirect {
    /// The most redirects one request follows.
    static let limit = 10

    /// The statuses that redirect a `GET`.
    static let statuses: Set<Int> = [301, 302, 303, 307, 308]

    /// The headers that go to the request's own origin only: a redirect to another origin drops them.
    static let originBoundHeaders = ["Authorization", "Proxy-Authorization", "Cookie", "Origin"]

    /// What a response means for the request of `url`.
    enum Step: Equatable {
        /// Not a redirect: the response is the answer.
        case answer
        /// Follow it to this URL.
        case follow(URL)
        /// A redirect that must not be followed; the reason names its target.
        case refuse(String)
    }

    /// The step for a response with `status` and `location` to the request of `url`, after the
    /// URLs of `visited` (the first request's included).
    static func step(status: Int, location: String?, from url: URL, visited: [URL]) -> Step {
        guard statuses.contains(status), let location, let target = URL(string: location, relativeTo: url)?.absoluteURL
        else { return .answer }
        if let problem = DownloadURLCheck.problem(with: target) {
            return .refuse("the redirect to \(target.redactedString) cannot be followed: \(problem.reason)")
        }
        guard visited.count <= limit else { return .refuse("more than \(limit) redirects") }
        guard !visited.contains(where: { $0.absoluteString == target.absoluteString }) else {
            return .refuse("a redirect cycle, back to \(target.redactedString)")
        }
        return .follow(target)
    }

    /// Whether `a` and `b` are of the same origin (RFC 6454: scheme, host and port).
    static func isSameOrigin(_ a: URL, _ b: URL) -> Bool {
        a.scheme?.lowercased() == b.scheme?.lowercased() && a.host?.lowercased() == b.host?.lowercased()
            && effectivePort(a) == effectivePort(b)
    }

    private static func effectivePort(_ url: URL) -> Int? {
        url.port ?? (url.scheme?.lowercased() == "https" ? 443 : 80)
    }
}

extension URL {
    /// The `Authorization` value (`Basic …`, RFC 7617) of the user and password in the URL
    /// (`http://alice:secret@host/`), percent-decoded; nil when it names no user.
    package var basicAuthorization: String? {
        guard let components = URLComponents(url: self, resolvingAgainstBaseURL: false),
            let user = components.percentEncodedUser.map({ $0.removingPercentEncoding ?? $0 }), !user.isEmpty
        else { return nil }
        let password = components.percentEncodedPassword.map { $0.removingPercentEncoding ?? $0 } ?? ""
        return "Basic " + Data("\(user):\(password)".utf8).base64EncodedString()
    }
}
