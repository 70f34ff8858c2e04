import Dispatch
import Foundation

/// The design of the seed articles (000/001), ported to Swift 6 as the reference: a `Task` wraps a
/// closure that receives a `Controller` with `finish()` and `fail(with:)`; `group` runs all on the
/// controller's queue and keeps the first error; `sequence` runs one after another on any queue.
/// No cancellation, progress, observation or exactly-once guard: the cost floor of the idea.
public struct SeedTask: Sendable {
    public struct Controller: Sendable {
        public let queue: DispatchQueue
        let handler: @Sendable (Result<Void, any Error>) -> Void

        public func finish() { handler(.success(())) }
        public func fail(with error: any Error) { handler(.failure(error)) }
    }

    let closure: @Sendable (Controller) -> Void

    public init(_ closure: @escaping @Sendable (Controller) -> Void) {
        self.closure = closure
    }

    public func perform(
        on queue: DispatchQueue = .global(), then handler: @escaping @Sendable (Result<Void, any Error>) -> Void
    ) {
        queue.async { closure(Controller(queue: queue, handler: handler)) }
    }

    public static func group(_ tasks: [SeedTask]) -> SeedTask {
        SeedTask { controller in
            let group = DispatchGroup()
            let anyError = SeedLocked<(any Error)?>(nil)
            for task in tasks {
                group.enter()
                task.perform(on: controller.queue) { result in
                    if case .failure(let error) = result { anyError.withLock { $0 = $0 ?? error } }
                    group.leave()
                }
            }
            group.notify(queue: controller.queue) {
                if let error = anyError.withLock({ $0 }) { controller.fail(with: error) } else { controller.finish() }
            }
        }
    }

    public static func sequence(_ tasks: [SeedTask]) -> SeedTask {
        SeedTask { controller in
            @Sendable func run(_ index: Int) {
                guard index < tasks.count else { return controller.finish() }
                tasks[index].perform(on: controller.queue) { result in
                    if case .failure(let error) = result { return controller.fail(with: error) }
                    run(index + 1)
                }
            }
            run(0)
        }
    }
}

/// A value behind a lock, for the seed design.
// Safety: `value` is only touched under `lock`.
final class SeedLocked<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value

    init(_ value: Value) { self.value = value }

    func withLock<R>(_ body: (inout Value) -> R) -> R { lock.withLock { body(&value) } }
}
