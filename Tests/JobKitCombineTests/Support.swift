import Dispatch
import Foundation
import JobKit
import JobKitTestSupport
import Testing

#if canImport(Combine)
    import Combine
#else
    import OpenCombine
#endif

/// A queue that can tell whether code is running on it, on Linux too (where `===` on queues lies).
final class TaggedQueue: Sendable {
    let queue: DispatchQueue
    private let key = DispatchSpecificKey<ObjectIdentifier>()

    init(_ label: String, attributes: DispatchQueue.Attributes = []) {
        queue = DispatchQueue(label: label, attributes: attributes)
        queue.setSpecific(key: key, value: ObjectIdentifier(self))
    }

    var isCurrent: Bool { DispatchQueue.getSpecific(key: key) == ObjectIdentifier(self) }
}

struct TestError: Error, Equatable {
    let id: Int
}

/// What a `Recorder` received, in order.
enum Received<Input: Sendable>: Sendable {
    case value(Input, onQueue: Bool)
    case finished(onQueue: Bool)
    case failure(any Error, onQueue: Bool)

    var value: Input? {
        if case .value(let value, _) = self { return value }
        return nil
    }

    var isCompletion: Bool {
        if case .value = self { return false }
        return true
    }

    var wasOnQueue: Bool {
        switch self {
        case .value(_, let onQueue), .finished(let onQueue), .failure(_, let onQueue): onQueue
        }
    }
}

/// A subscriber that records what it receives and asks for exactly what the test says.
// Safety: every stored property is guarded by `lock`; the subscription is only called outside it.
final class Recorder<Input: Sendable, Failure: Error>: Subscriber, @unchecked Sendable {
    private let lock = NSLock()
    private var subscription: (any Subscription)?
    private var log: [Received<Input>] = []
    private var waiters: [(count: Int, resume: @Sendable () -> Void)] = []
    private let initialDemand: Subscribers.Demand
    private let demandPerValue: Subscribers.Demand
    private let queue: TaggedQueue?

    init(
        demand: Subscribers.Demand = .unlimited, perValue: Subscribers.Demand = .none, queue: TaggedQueue? = nil
    ) {
        self.initialDemand = demand
        self.demandPerValue = perValue
        self.queue = queue
    }

    var received: [Received<Input>] { lock.withLock { log } }
    var values: [Input] { received.compactMap(\.value) }

    func receive(subscription: any Subscription) {
        lock.withLock { self.subscription = subscription }
        if initialDemand > 0 { subscription.request(initialDemand) }
    }

    func receive(_ input: Input) -> Subscribers.Demand {
        append(.value(input, onQueue: queue?.isCurrent ?? true))
        return demandPerValue
    }

    func receive(completion: Subscribers.Completion<Failure>) {
        switch completion {
        case .finished: append(.finished(onQueue: queue?.isCurrent ?? true))
        case .failure(let error): append(.failure(error, onQueue: queue?.isCurrent ?? true))
        }
        lock.withLock { subscription = nil }
    }

    func request(_ demand: Subscribers.Demand) {
        lock.withLock { subscription }?.request(demand)
    }

    func cancel() {
        lock.withLock { subscription.take() }?.cancel()
    }

    /// Waits (without blocking a thread) until `count` events were received; after the safety
    /// deadline records an issue naming the count and what came.
    func wait(for count: Int, sourceLocation: SourceLocation = #_sourceLocation) async {
        let arrived: Void? = await awaitCallback("\(count) events", sourceLocation: sourceLocation) { continuation in
            let ready = lock.withLock { () -> Bool in
                if log.count >= count { return true }
                waiters.append((count, { continuation.resume() }))
                return false
            }
            if ready { continuation.resume() }
        }
        if arrived == nil { Issue.record("received: \(received)", sourceLocation: sourceLocation) }
    }

    private func append(_ event: Received<Input>) {
        let ready = lock.withLock { () -> [@Sendable () -> Void] in
            log.append(event)
            let ready = waiters.filter { $0.count <= log.count }.map(\.resume)
            waiters.removeAll { $0.count <= log.count }
            return ready
        }
        for resume in ready { resume() }
    }
}

extension Optional {
    mutating func take() -> Wrapped? {
        defer { self = nil }
        return self
    }
}

/// A one-shot signal a test awaits, named for what it tells (`Signal("the body started")`).
final class Signal: Sendable {
    private let name: String
    private let state = Locked<(fired: Bool, waiters: [@Sendable () -> Void])>((false, []))

    init(_ name: String) { self.name = name }

    func fire() {
        let waiters = state.withLock { state -> [@Sendable () -> Void] in
            state.fired = true
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter() }
    }

    var hasFired: Bool { state.withLock { $0.fired } }

    /// Waits (without blocking a thread) until the signal fires; throws `WaitTimedOut`, naming it,
    /// once the safety deadline passes first.
    func wait() async throws {
        try await awaitCallbackOrThrow(name) { (continuation: Resumer<Void>) in
            let fired = state.withLock { state -> Bool in
                if !state.fired { state.waiters.append { continuation.resume() } }
                return state.fired
            }
            if fired { continuation.resume() }
        }
    }
}
