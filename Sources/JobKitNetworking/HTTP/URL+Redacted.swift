import Foundation

extension URL {
    /// The URL as text for messages and displays: a user and password (`https://user:secret@host/…`)
    /// are left out, as curl and browsers do; the rest is as given.
    package var redactedString: String {
        guard user != nil || password != nil,
            var components = URLComponents(url: self, resolvingAgainstBaseURL: false)
        else { return absoluteString }
        components.user = nil
        components.password = nil
        return components.string ?? absoluteString
    }
}
