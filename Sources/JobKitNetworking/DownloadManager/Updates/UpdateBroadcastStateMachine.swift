/// The consumers of `DownloadManager.updates()` and what each one is owed, as a value: it never
/// resumes anything, never reads a clock and never touches a queue. Every transition returns the
/// waiters to resume (with an update, or nil for the end), for the caller to resume once its lock is
/// released. `Waiter` is a continuation (tests use anything).
///
/// Each consumer holds its first update (the snapshot it started from, until it takes it) and at
/// most one more: the events it has not taken yet, in order, and the newest snapshot. A delivery appends its events and replaces the snapshot, so a slow consumer
/// gets fewer, newer snapshots and every event, never a backlog of snapshots: its buffer is at most
/// two snapshots (the items and totals) plus the events since it last took an update. Events are never
/// dropped or merged.
struct UpdateBroadcastStateMachine<Waiter: Sendable>: Sendable {
    typealias Update = DownloadManager.Update
    typealias ConsumerID = UInt64
    typealias Cut = UpdateCut
    typealias Delivery = UpdateDelivery

    /// What `next` should do.
    enum Next {
        /// Return this update now.
        case deliver(Update)
        /// Return nil: the sequence ended (closed, cancelled, or never started).
        case end
        /// Keep the waiter: a delivery or the end resumes it.
        case wait
    }

    private enum Consumer {
        /// Not waiting, its first update (the snapshot, with no events) not taken yet; `pending` is
        /// what came after it.
        case starting(snapshot: Update, pending: Update?, cut: Cut)
        /// Not waiting; `pending` is what the next `next` returns at once.
        case idle(pending: Update?, cut: Cut)
        /// Waiting in `next`, with nothing pending.
        case waiting(Waiter, cut: Cut)

        var cut: Cut {
            switch self {
            case .starting(_, _, let cut), .idle(_, let cut), .waiting(_, let cut): cut
            }
        }
    }

    private var consumers: [ConsumerID: Consumer] = [:]
    private var nextID: ConsumerID = 0
    /// The final delivery came (or the manager went away): no consumer is added, none is fed.
    private(set) var isFinished = false

    /// How many consumers are registered (ended and cancelled ones are not).
    var consumerCount: Int { consumers.count }

    /// Registers a consumer whose first update is `initial` (a snapshot, with no events); nil once
    /// finished (its sequence ends at once).
    mutating func subscribe(initial: Update, after cut: Cut) -> ConsumerID? {
        guard !isFinished else { return nil }
        nextID += 1
        consumers[nextID] = .starting(snapshot: initial, pending: nil, cut: cut)
        return nextID
    }

    /// The consumer `id` asks for its next update, with `waiter` to resume if it must wait.
    mutating func next(_ id: ConsumerID, _ waiter: Waiter) -> Next {
        switch consumers[id] {
        case nil:
            return .end
        case .waiting:
            // A copy of the iterator is already waiting: one consumer has one waiter at a time.
            return .end
        case .starting(let snapshot, let pending, let cut):
            consumers[id] = .idle(pending: pending, cut: cut)
            return .deliver(snapshot)
        case .idle(let pending?, let cut):
            consumers[id] = .idle(pending: nil, cut: cut)
            return .deliver(pending)
        case .idle(nil, let cut):
            if isFinished {
                consumers[id] = nil
                return .end
            }
            consumers[id] = .waiting(waiter, cut: cut)
            return .wait
        }
    }

    /// Feeds a delivery to every consumer: waiting ones are resumed with their part of it, the
    /// others keep it merged into what they had. A final delivery then ends every consumer (each
    /// still gets what it holds first).
    mutating func deliver(_ delivery: Delivery) -> [(Waiter, Update?)] {
        guard !isFinished else { return [] }
        var resumes: [(Waiter, Update?)] = []
        for (id, consumer) in consumers {
            let cut = consumer.cut
            guard delivery.number > cut.deliveriesBefore else { continue }
            var part = delivery.update
            if delivery.firstEvent < cut.eventsBefore {
                let seen = cut.eventsBefore - delivery.firstEvent
                part.events = seen >= UInt64(part.events.count) ? [] : Array(part.events.dropFirst(Int(seen)))
            }
            switch consumer {
            case .waiting(let waiter, _):
                resumes.append((waiter, part))
                consumers[id] = .idle(pending: nil, cut: cut)
            case .starting(let snapshot, let pending, _):
                consumers[id] = .starting(snapshot: snapshot, pending: Self.merge(part, into: pending), cut: cut)
            case .idle(let pending, _):
                consumers[id] = .idle(pending: Self.merge(part, into: pending), cut: cut)
            }
        }
        if delivery.isFinal { resumes += finish().map { ($0, nil) } }
        return resumes
    }

    /// `part` after `pending`: the events of both, in order, and the newer snapshot.
    private static func merge(_ part: Update, into pending: Update?) -> Update {
        guard var merged = pending else { return part }
        merged.events += part.events
        merged.items = part.items
        merged.totals = part.totals
        return merged
    }

    /// Ends every consumer: the waiting ones are returned (resume them with nil) and removed; the
    /// others return what they hold, then nil.
    mutating func finish() -> [Waiter] {
        isFinished = true
        var waiters: [Waiter] = []
        for (id, consumer) in consumers {
            guard case .waiting(let waiter, _) = consumer else { continue }
            waiters.append(waiter)
            consumers[id] = nil
        }
        return waiters
    }

    /// The consumer `id` stopped (its task was cancelled, or its iterator released): it is removed
    /// with what it held; its waiter, if any, is returned (resume it with nil).
    mutating func cancel(_ id: ConsumerID) -> Waiter? {
        guard let consumer = consumers.removeValue(forKey: id) else { return nil }
        if case .waiting(let waiter, _) = consumer { return waiter }
        return nil
    }
}

/// Where a consumer starts, against the manager's numbering of events and deliveries (see
/// `Outbox`): its first update is a snapshot taken after `deliveriesBefore` deliveries had begun
/// and `eventsBefore` events had been noted, so it skips those deliveries whole and the events
/// numbered below `eventsBefore` (the snapshot already holds them).
struct UpdateCut: Equatable {
    var deliveriesBefore: UInt64
    var eventsBefore: UInt64
}

/// One delivery of the manager: its update, its number, the sequence number of its first event,
/// and whether it is the last (the manager was closed before it began).
struct UpdateDelivery {
    var update: DownloadManager.Update
    var number: UInt64
    var firstEvent: UInt64
    var isFinal: Bool
}
