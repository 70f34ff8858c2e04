import Hummingbird
import Testing

@testable import JobKitServer

/// `Idempotency-Key` values: the draft's quoted form and bare values are taken; anything else is refused with a
/// reason, never trapped on.
@Suite struct IdempotencyKeyTests {
    private func reason(_ field: String) -> String? {
        guard case .failure(let invalid) = IdempotencyKey.parse(field: field) else { return nil }
        return invalid.reason
    }

    @Test func quotedAndBareKeysAreTaken() {
        let uuid = "8e03978e-40d5-43e8-bc93-6894a57f9324"
        #expect((try? IdempotencyKey.parse(field: "\"\(uuid)\"").get())?.value == uuid)
        #expect((try? IdempotencyKey.parse(field: uuid).get())?.value == uuid)
        #expect((try? IdempotencyKey.parse(field: " \t\"a b\\\"c\\\\d\" ").get())?.value == #"a b"c\d"#)
        let longest = String(repeating: "k", count: IdempotencyKey.maximumLength)
        #expect((try? IdempotencyKey.parse(field: longest).get())?.value == longest)
    }

    @Test func emptyLongAndUnprintableKeysAreRefusedWithAReason() {
        let tooLong = "must have at most \(IdempotencyKey.maximumLength) characters"
        for (field, expected) in [
            ("", "must not be empty"), ("  ", "must not be empty"), (#""""#, "must not be empty"),
            (String(repeating: "k", count: 256), "\(tooLong); it has 256"),
            (String(repeating: "k", count: 10_240), "\(tooLong); it has 10240"),
            ("\"" + String(repeating: "k", count: 10_240) + "\"", "\(tooLong); it has 10240"),
            ("\u{1}abc", "it has 0x01 at position 1"), ("\"a\tb\"", "it has 0x09 at position 2"),
            ("\"a\u{7F}\"", "it has 0x7F at position 2"), ("\"a\u{0}\"", "it has 0x00 at position 2"),
            ("\"a\r\nb\"", "it has 0x0D at position 2"), ("clé", "it has a character that is not ASCII at position 3"),
            ("\"abc", "has no closing quote"), ("\"a\"b", "nothing after its closing quote"),
            ("\"a\", \"b\"", "nothing after its closing quote"), ("\"a\\b\"", "may escape only"),
            ("\"a\\", "may escape only"), ("a b", "has a space at position 2"), ("a\"b", "has '\"' at position 2"),
            ("a\\b", "has '\\' at position 2"),
        ] {
            let found = reason(field)
            #expect(found?.contains(expected) == true, "\(field.prefix(20).debugDescription): \(found ?? "taken")")
        }
    }

    @Test func aRequestWithoutTheFieldHasNoKeyAndOneWithTwoIsRefused() throws {
        #expect(try IdempotencyKey.parse(HTTPFields()).get() == nil)
        var one = HTTPFields()
        one[IdempotencyKey.header] = "\"k\""
        #expect(try IdempotencyKey.parse(one).get()?.value == "k")
        var two = HTTPFields()
        two[values: IdempotencyKey.header] = ["\"k\"", "\"k\""]
        guard case .failure(let invalid) = IdempotencyKey.parse(two) else {
            Issue.record("two fields were taken")
            return
        }
        #expect(invalid.message == "Idempotency-Key must be given once; the request has 2")
    }

    @Test func aStoredKeyIsTakenOnlyIfARequestCouldHaveGivenIt() {
        #expect(IdempotencyKey(stored: "a b\"c")?.value == "a b\"c")
        #expect(IdempotencyKey(stored: "") == nil)
        #expect(IdempotencyKey(stored: "a\nb") == nil)
        #expect(IdempotencyKey(stored: String(repeating: "k", count: 256)) == nil)
    }
}
