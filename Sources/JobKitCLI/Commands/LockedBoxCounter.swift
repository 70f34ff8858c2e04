import Dispatch
import Foundation
import JobKit

/// A counter behind a lock.
final class LockedBoxCounter: Sendable {
    private let value = LockedBox<Int>.make(0)

    /// Adds one and returns the new count.
    func increment() -> Int {
        value.withLock {
            $0 += 1
            return $0
        }
    }

    /// The count now.
    var count: Int { value.withLock { $0 } }
}
