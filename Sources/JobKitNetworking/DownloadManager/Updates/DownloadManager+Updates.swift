extension DownloadManager {
    /// The manager's updates as an `AsyncSequence`, for any number of consumers at once.
    ///
    /// **Threading.** Call it, iterate it and cancel the iterating task from any thread or task.
    /// Each iteration (each `makeAsyncIterator()`) is one consumer with its own buffer, fed by the
    /// deliveries that `onUpdate` gets, on the result queue (a result queue that never runs, as a
    /// main queue nobody drains, delays every consumer); a slow consumer never slows the manager, the
    /// result queue or the other consumers. An iterator keeps its buffer, not the manager.
    ///
    /// Each iteration starts with an update holding every item as it is when the iterator is made
    /// (and no events); then come every event after that snapshot, in order, never dropped or
    /// merged, each update with the newest items and totals. Progress is coalesced per consumer: one
    /// that does not keep up gets fewer, newer snapshots, never a backlog — its buffer holds the
    /// snapshot it starts from (until taken), the newest snapshot and the events it has not taken yet. The iteration ends (`next()` returns nil) after
    /// the manager is closed (with the events up to `close()`), or when the manager is released;
    /// one made after `close()` ends at once. A consumer whose task is cancelled ends at once, and
    /// one whose iterator is released is removed, with what it held.
    ///
    /// ```swift
    /// for await update in manager.updates() {
    ///     for case .changed(let item) in update.events { print(item.name, item.state) }
    ///     print("\(update.totals.received) of \(update.totals.expected) bytes")
    /// }
    /// // here the manager was closed
    /// ```
    public func updates() -> Updates { Updates(manager: self) }

    /// The updates of a manager: see `DownloadManager.updates()`.
    ///
    /// **Threading.** A value to pass anywhere; each `makeAsyncIterator()` is a new consumer, from
    /// a snapshot then. It keeps the manager alive while it is kept; its iterators do not.
    public struct Updates: AsyncSequence, Sendable {
        /// What the sequence yields: the events since the previous one, and the items and totals now.
        public typealias Element = Update

        let manager: DownloadManager

        /// A new consumer: its first update is every item as it is now.
        public func makeAsyncIterator() -> AsyncIterator {
            AsyncIterator(subscription: manager.subscribe())
        }

        /// One consumer of a manager's updates.
        ///
        /// **Threading.** Call `next()` from one task at a time (a copy waiting at the same time as
        /// another gets nil). Cancelling that task ends the iteration. Releasing the iterator (all
        /// its copies) removes the consumer and its buffer.
        public struct AsyncIterator: AsyncIteratorProtocol, Sendable {
            let subscription: UpdateSubscription<Machine>

            /// The next update: waits for one when none is buffered; nil once the manager is closed
            /// (after the last events) or released, or the task is cancelled.
            public mutating func next() async -> Update? {
                await subscription.next()
            }
        }
    }

    /// A new consumer of `updates()`, from a snapshot taken now — or one that ends at once, once
    /// the manager is closed.
    func subscribe() -> UpdateSubscription<Machine> {
        // Under the state lock: the snapshot and the registration are one step, so the consumer
        // takes exactly the deliveries and events after its snapshot.
        let id = state.withLock { machine in
            machine.updateStart(now: now()).flatMap { machine.consumers.subscribe(initial: $0.update, after: $0.cut) }
        }
        return UpdateSubscription(broadcaster: broadcaster, id: id)
    }

    /// How many consumers of `updates()` are registered (for tests).
    var updateConsumerCount: Int { broadcaster.consumerCount }
}
