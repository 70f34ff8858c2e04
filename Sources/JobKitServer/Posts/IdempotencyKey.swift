import Hummingbird

/// The `Idempotency-Key` of a request (IETF `draft-ietf-httpapi-idempotency-key-header`): a value the client
/// makes once per operation and sends with every attempt, so that the server performs the operation once.
///
/// The draft's form is a Structured Field string, `Idempotency-Key: "8e03978e-40d5-43e8-bc93-6894a57f9324"`
/// (`\"` and `\\` escape a quote and a backslash); a bare value (`Idempotency-Key: 8e03978e-…`), as many
/// clients send it, is taken too when it has no space, quote or backslash. Either way the key is 1 to
/// `maximumLength` printable ASCII characters, and the field is given once. Anything else is refused with a
/// reason, never trapped on: keys come from outside.
struct IdempotencyKey: Hashable, Sendable {
    /// The longest key, in characters (a UUID has 36).
    static let maximumLength = 255
    static let header = HTTPFields.Element.Name("Idempotency-Key")!

    /// The key, unquoted.
    let value: String

    /// Why a request's key was refused; `message` is the answer's text.
    struct Invalid: Error, Equatable {
        var reason: String
        var message: String { "Idempotency-Key \(reason)" }
    }

    /// The key of `headers`: nil when the request has none.
    static func parse(_ headers: HTTPFields) -> Result<IdempotencyKey?, Invalid> {
        let values = headers[values: header]
        guard let field = values.first else { return .success(nil) }
        guard values.count == 1 else {
            return .failure(Invalid(reason: "must be given once; the request has \(values.count)"))
        }
        return parse(field: field).map { Optional.some($0) }
    }

    /// The key of one field's value: a quoted string or a bare value, as the type describes.
    static func parse(field: String) -> Result<IdempotencyKey, Invalid> {
        var bytes = Array(field.utf8)[...]
        while let first = bytes.first, first == space || first == tab { bytes.removeFirst() }
        while let last = bytes.last, last == space || last == tab { bytes.removeLast() }
        let field = Array(bytes)
        guard field.first == quote else {
            if let index = field.firstIndex(where: { $0 == quote || $0 == backslash || $0 == space }) {
                return .failure(
                    Invalid(
                        reason: "has \(describe(field[index])) at position \(index + 1): send it as a quoted string"))
            }
            return validated(field)
        }
        var key: [UInt8] = []
        var index = 1
        while index < field.count {
            let byte = field[index]
            index += 1
            switch byte {
            case quote:
                guard index == field.count else {
                    return .failure(Invalid(reason: "must be one quoted string, with nothing after its closing quote"))
                }
                return validated(key)
            case backslash:
                guard index < field.count, field[index] == quote || field[index] == backslash else {
                    return .failure(Invalid(reason: "may escape only a quote or a backslash with a backslash"))
                }
                key.append(field[index])
                index += 1
            default:
                key.append(byte)
            }
        }
        return .failure(Invalid(reason: "has no closing quote"))
    }

    /// A key read back from where it was stored (the posts log): nil unless it is one `parse` would give.
    init?(stored value: String) {
        guard case .success(let key) = Self.validated(Array(value.utf8)) else { return nil }
        self = key
    }

    private init(value: String) {
        self.value = value
    }

    /// `bytes` as a key, if it is 1 to `maximumLength` printable ASCII characters.
    private static func validated(_ bytes: [UInt8]) -> Result<IdempotencyKey, Invalid> {
        guard !bytes.isEmpty else { return .failure(Invalid(reason: "must not be empty")) }
        if let index = bytes.firstIndex(where: { !(0x20...0x7E).contains($0) }) {
            return .failure(
                Invalid(
                    reason: "may have only printable ASCII characters; it has \(describe(bytes[index])) "
                        + "at position \(index + 1)"))
        }
        guard bytes.count <= maximumLength else {
            return .failure(
                Invalid(reason: "must have at most \(maximumLength) characters; it has \(bytes.count)"))
        }
        return .success(IdempotencyKey(value: String(decoding: bytes, as: UTF8.self)))
    }

    /// `'a'` for a printable character, `0x09` for a control character.
    private static func describe(_ byte: UInt8) -> String {
        if (0x21...0x7E).contains(byte) { return "'\(Character(Unicode.Scalar(byte)))'" }
        if byte == space { return "a space" }
        if byte >= 0x80 { return "a character that is not ASCII" }
        let hex = String(byte, radix: 16, uppercase: true)
        return "0x" + (hex.count < 2 ? "0" : "") + hex
    }

    private static let quote = UInt8(ascii: "\"")
    private static let backslash = UInt8(ascii: "\\")
    private static let space = UInt8(ascii: " ")
    private static let tab = UInt8(ascii: "\t")
}
