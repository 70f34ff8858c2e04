import Testing

@testable import JobKitServer

/// The remembered idempotency keys: each gives its post, and never more than `capacity` are kept.
@Suite struct IdempotencyKeysTests {
    private func key(_ value: String) -> IdempotencyKey {
        IdempotencyKey(stored: value)!
    }

    @Test func aRememberedKeyGivesItsPost() {
        var keys = IdempotencyKeys(capacity: 4)
        keys.remember(key("a"), post: 0)
        keys.remember(key("b"), post: 7)
        #expect(keys.post(for: key("a")) == 0 && keys.post(for: key("b")) == 7 && keys.post(for: key("c")) == nil)
    }

    @Test func pastTheCapacityTheOldestKeysAreForgotten() {
        var keys = IdempotencyKeys(capacity: 3)
        for (index, value) in ["a", "b", "c", "d"].enumerated() { keys.remember(key(value), post: index) }
        #expect(keys.count == 3)
        #expect(keys.post(for: key("a")) == nil && keys.post(for: key("b")) == 1 && keys.post(for: key("d")) == 3)

        var many = IdempotencyKeys(capacity: 100)
        for index in 0..<25_000 { many.remember(key("key-\(index)"), post: index) }
        #expect(many.count == 100)
        #expect(many.post(for: key("key-24899")) == nil && many.post(for: key("key-24900")) == 24_900)
        #expect(many.post(for: key("key-24999")) == 24_999)
        #expect(IdempotencyKeys().capacity == IdempotencyKeys.defaultCapacity)
    }

    @Test func aKeyRememberedAgainTakesTheNewPostAndNoSecondPlace() {
        var keys = IdempotencyKeys(capacity: 2)
        keys.remember(key("a"), post: 0)
        keys.remember(key("a"), post: 5)
        keys.remember(key("b"), post: 6)
        #expect(keys.count == 2 && keys.post(for: key("a")) == 5)
        keys.remember(key("c"), post: 7)
        #expect(keys.post(for: key("a")) == nil && keys.post(for: key("b")) == 6 && keys.post(for: key("c")) == 7)
    }

    @Test func aCapacityOfZeroOrLessKeepsNoKey() {
        for capacity in [0, -1, Int.min] {
            var keys = IdempotencyKeys(capacity: capacity)
            keys.remember(key("a"), post: 0)
            #expect(keys.count == 0 && keys.post(for: key("a")) == nil)
        }
    }
}
