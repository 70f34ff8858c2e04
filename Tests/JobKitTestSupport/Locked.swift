import JobKit

/// A value behind the package's one lock (`LockedBox`), for tests.
package struct Locked<Value: Sendable>: Sendable {
    private let box: LockedBox<Value>

    package init(_ value: Value) { box = .make(value) }

    /// Runs `body` with exclusive access to the value.
    package func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        try box.withLock(body)
    }

    /// The value now.
    package var current: Value { withLock { $0 } }
}
