import Foundation
import JobKit

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Opens once; what waits for it runs then (on a global queue), without holding a thread meanwhile.
final class Gate: Sendable {
    private let state = LockedBox<(isOpen: Bool, waiting: [@Sendable () -> Void])>.make((false, []))

    /// Runs `action` once the gate is open (at once if it is).
    func whenOpen(_ action: @escaping @Sendable () -> Void) {
        let runNow = state.withLock { state -> Bool in
            if state.isOpen { return true }
            state.waiting.append(action)
            return false
        }
        if runNow { DispatchQueue.global().async(execute: action) }
    }

    func open() {
        let waiting = state.withLock { state -> [@Sendable () -> Void] in
            state.isOpen = true
            defer { state.waiting = [] }
            return state.waiting
        }
        for action in waiting { DispatchQueue.global().async(execute: action) }
    }
}
