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
        (
            "https://api.h/f?access_token=ya29.a0&token=t0k&Password=pw&x=1",
            "https://api.h/f?access_token=REDACTED&token=REDACTED&Password=REDACTED&x=1"
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

    @Test func secretsInsideAnyTextAreHiddenAndTheRestKeptByteForByte() {
        let cases: [(String, String)] = [
            (
                "redirect to https://b.s3/k?X-Amz-Signature=abc123&x=1 now",
                "redirect to https://b.s3/k?X-Amz-Signature=REDACTED&x=1 now"
            ),
            (
                #"[("location", "/next?sig=s%2Bt&access_token=tok#f"), ("Authorization", "Bearer s3cret")]"#,
                #"[("location", "/next?sig=REDACTED&access_token=REDACTED#f"), ("Authorization", "REDACTED")]"#
            ),
            (
                "GET http://alice:pw@h:8080/a?Token=t1;password=p2",
                "GET http://h:8080/a?Token=REDACTED;password=REDACTED"
            ),
            ("authorization: Basic YWxpY2U6cHc=\nHost: h", "authorization: REDACTED\nHost: h"),
            ("Cookie: a=b; c=d", "Cookie: REDACTED"),
            ("https://h/f?signature2=x&q=1 and a@b, ö ✓", "https://h/f?signature2=x&q=1 and a@b, ö ✓"),
            ("https://[::1]:8/f?sig=", "https://[::1]:8/f?sig="),
            ("", ""),
        ]
        for (text, expected) in cases {
            #expect(SecretRedaction.redact(text) == expected, "\(text)")
        }
    }
}
