import Foundation
import Testing

@testable import JobKitNetworking

@Suite struct URLRedactedTests {
    @Test func aUserAndPasswordAreLeftOut() {
        let url = URL(string: "https://user:secret@example.com/a.bin?part=1")!
        #expect(url.redactedString == "https://example.com/a.bin?part=1")
    }

    @Test(arguments: [
        (
            "https://b.s3.amazonaws.com/k?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIA%2F20261125&X-Amz-Signature=abc123",
            "https://b.s3.amazonaws.com/k?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=REDACTED&X-Amz-Signature=REDACTED"
        ),
        (
            "https://a.blob.core.windows.net/c/f?sv=2024&sig=s%2Bt%3D",
            "https://a.blob.core.windows.net/c/f?sv=2024&sig=REDACTED"
        ),
        (
            "https://d.cloudfront.net/f?Expires=1&Signature=xyz&Key-Pair-Id=K",
            "https://d.cloudfront.net/f?Expires=1&Signature=REDACTED&Key-Pair-Id=K"
        ),
        (
            "https://h/f?AWSAccessKeyId=AKIA&x-goog-signature=00ff",
            "https://h/f?AWSAccessKeyId=REDACTED&x-goog-signature=REDACTED"
        ),
    ])
    func aSignedURLsSecretsReadRedacted(url: String, expected: String) {
        #expect(URL(string: url)!.redactedString == expected)
    }

    @Test func otherURLsAreAsGiven() {
        for text in [
            "https://example.com/a%20b.bin?q=1&sig", "http://127.0.0.1:8080/", "https://h/f?signature2=x#frag",
        ] {
            #expect(URL(string: text)!.redactedString == text)
        }
    }
}
