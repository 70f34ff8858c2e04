import Foundation

extension URL {
    /// The query parameters whose values are secrets: a signed URL's (S3, Azure, Google Cloud Storage,
    /// CloudFront), as OpenTelemetry's `url.full` convention lists them, plus S3's SigV4 names, and the
    /// tokens and passwords of OAuth and of APIs that take them in the query (`access_token`, `token`,
    /// `password`, …). Compared without regard to case.
    package static let signatureParameters: Set<String> = [
        "awsaccesskeyid", "signature", "sig", "x-goog-signature",
        "x-amz-signature", "x-amz-credential", "x-amz-security-token",
        "token", "access_token", "refresh_token", "id_token", "password", "passwd", "pwd", "client_secret",
        "api_key", "apikey",
    ]

    /// The URL as text for messages, logs, spans and displays: a user and password
    /// (`https://user:secret@host/…`) are left out, as curl and browsers do, and the value of a signed
    /// URL's signature parameters and tokens (`Signature`, `sig`, `X-Amz-Signature`, `access_token`,
    /// `password`, …) reads `REDACTED`; the rest is as given. The journal keeps the whole URL: a restored
    /// item needs it. `SecretRedaction.redact(_:)` does the same to URLs inside any text (a log line).
    package var redactedString: String {
        guard var components = URLComponents(url: self, resolvingAgainstBaseURL: false) else { return absoluteString }
        var changed = false
        if components.user != nil || components.password != nil {
            components.user = nil
            components.password = nil
            changed = true
        }
        if let items = components.percentEncodedQueryItems,
            items.contains(where: { Self.signatureParameters.contains($0.name.lowercased()) && $0.value != nil })
        {
            components.percentEncodedQueryItems = items.map { item in
                guard Self.signatureParameters.contains(item.name.lowercased()), item.value != nil else { return item }
                return URLQueryItem(name: item.name, value: "REDACTED")
            }
            changed = true
        }
        return changed ? components.string ?? absoluteString : absoluteString
    }
}
