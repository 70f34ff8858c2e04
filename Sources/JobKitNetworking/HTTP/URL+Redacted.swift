import Foundation

extension URL {
    /// The query parameters whose values are secrets of a signed URL (S3, Azure, Google Cloud
    /// Storage, CloudFront), as OpenTelemetry's `url.full` convention lists them, plus S3's SigV4
    /// names. Compared without regard to case.
    static let signatureParameters: Set<String> = [
        "awsaccesskeyid", "signature", "sig", "x-goog-signature",
        "x-amz-signature", "x-amz-credential", "x-amz-security-token",
    ]

    /// The URL as text for messages, logs, spans and displays: a user and password
    /// (`https://user:secret@host/…`) are left out, as curl and browsers do, and the value of a signed
    /// URL's signature parameters (`Signature`, `sig`, `X-Amz-Signature`, …) reads `REDACTED`; the rest
    /// is as given. The journal keeps the whole URL: a restored item needs it.
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
