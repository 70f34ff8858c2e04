import Foundation

/// Hides the secrets of URLs and credential headers inside any text — a log line, an error, an HTTP head
/// as a library prints it — the way `URL.redactedString` hides them in one URL: a user and password
/// after `scheme://` are left out, the value of every query parameter `URL.signatureParameters` names
/// (`X-Amz-Signature`, `sig`, `access_token`, `password`, …) reads `REDACTED`, and so does the value
/// of an `Authorization`, `Proxy-Authorization`, `Cookie` or `Set-Cookie` header, written as
/// `Name: value` or as `("Name", "value")`.
///
/// ```swift
/// SecretRedaction.redact("redirected to https://h/f?X-Amz-Signature=abc&x=1")
/// // "redirected to https://h/f?X-Amz-Signature=REDACTED&x=1"
/// ```
///
/// Text scanning, not parsing: it errs on hiding more (any `?name=` or `&name=` of those names, wherever
/// it is), never on hiding less; the rest of the text is kept byte for byte.
package enum SecretRedaction {
    /// The headers whose values are credentials, lower case.
    static let secretHeaders: Set<String> = ["authorization", "proxy-authorization", "cookie", "set-cookie"]

    /// `text` with its secrets replaced, as the type describes.
    package static func redact(_ text: String) -> String {
        let bytes = Array(text.utf8)
        guard mayHoldSecrets(bytes) else { return text }
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        var index = 0
        while index < bytes.count {
            let byte = bytes[index]
            if byte == colon, index + 2 < bytes.count, bytes[index + 1] == slash, bytes[index + 2] == slash {
                // `://`: drop a userinfo, up to the authority's last `@`.
                out += [colon, slash, slash]
                index += 3
                var end = index
                var at: Int?
                while end < bytes.count, !endsAuthority(bytes[end]) {
                    if bytes[end] == UInt8(ascii: "@") { at = end }
                    end += 1
                }
                if let at { index = at + 1 }
                continue
            }
            if byte == UInt8(ascii: "?") || byte == UInt8(ascii: "&") || byte == UInt8(ascii: ";") {
                out.append(byte)
                index += 1
                let nameEnd = bytes[index...].firstIndex { !isNameByte($0) } ?? bytes.count
                guard nameEnd < bytes.count, bytes[nameEnd] == UInt8(ascii: "="), nameEnd > index,
                    URL.signatureParameters.contains(lowercased(bytes[index..<nameEnd]))
                else { continue }
                out += bytes[index...nameEnd]
                index = nameEnd + 1
                let valueEnd = bytes[index...].firstIndex(where: endsValue) ?? bytes.count
                if valueEnd > index { out += redacted }
                index = valueEnd
                continue
            }
            if isLetter(byte), index == 0 || !isNameByte(bytes[index - 1]) {
                let nameEnd = bytes[index...].firstIndex { !isNameByte($0) } ?? bytes.count
                out += bytes[index..<nameEnd]
                let name = bytes[index..<nameEnd]
                index = nameEnd
                guard secretHeaders.contains(lowercased(name)), let valueStart = headerValueStart(bytes, after: nameEnd)
                else { continue }
                out += bytes[nameEnd..<valueStart]
                let valueEnd =
                    bytes[valueStart...].firstIndex {
                        $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\n") || $0 == UInt8(ascii: "\r")
                    } ?? bytes.count
                if valueEnd > valueStart { out += redacted }
                index = valueEnd
                continue
            }
            out.append(byte)
            index += 1
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Where a credential header's value starts after its name ends at `nameEnd`: `: value` or `", "value`
    /// (a tuple as Swift prints it); nil when neither follows.
    private static func headerValueStart(_ bytes: [UInt8], after nameEnd: Int) -> Int? {
        var index = nameEnd
        if index < bytes.count, bytes[index] == UInt8(ascii: "\"") {
            index += 1
            guard index < bytes.count, bytes[index] == UInt8(ascii: ",") else { return nil }
            index += 1
            while index < bytes.count, bytes[index] == UInt8(ascii: " ") { index += 1 }
            guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { return nil }
            return index + 1
        }
        guard index < bytes.count, bytes[index] == colon else { return nil }
        index += 1
        while index < bytes.count, bytes[index] == UInt8(ascii: " ") { index += 1 }
        return index
    }

    /// Whether the text has anything this could hide: `://`, `=` or a credential header's name.
    private static func mayHoldSecrets(_ bytes: [UInt8]) -> Bool {
        bytes.contains(UInt8(ascii: "=")) || bytes.contains(colon)
    }

    private static let redacted = Array("REDACTED".utf8)
    private static let colon = UInt8(ascii: ":")
    private static let slash = UInt8(ascii: "/")

    private static func lowercased(_ bytes: ArraySlice<UInt8>) -> String {
        String(decoding: bytes.map { isUpper($0) ? $0 + 32 : $0 }, as: UTF8.self)
    }

    private static func isUpper(_ byte: UInt8) -> Bool { (0x41...0x5A).contains(byte) }
    private static func isLetter(_ byte: UInt8) -> Bool { isUpper(byte) || (0x61...0x7A).contains(byte) }

    /// A byte of a parameter's or header's name: a letter, a digit, `-`, `_`, `.` or `%`.
    private static func isNameByte(_ byte: UInt8) -> Bool {
        isLetter(byte) || (0x30...0x39).contains(byte) || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "_")
            || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "%")
    }

    /// Where an authority ends: its path, query or fragment, or the end of the URL in the text.
    private static func endsAuthority(_ byte: UInt8) -> Bool {
        byte <= 0x20 || "/?#\"'<>\\,)".utf8.contains(byte)
    }

    /// Where a parameter's value ends: the next parameter, the fragment, or the end of the URL in the text.
    private static func endsValue(_ byte: UInt8) -> Bool {
        byte <= 0x20 || "&#;\"'<>,)]".utf8.contains(byte)
    }
}
