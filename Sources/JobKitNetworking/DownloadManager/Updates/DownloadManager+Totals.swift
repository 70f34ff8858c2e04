extension DownloadManager {
    /// Every item's bytes added up, with the counts of each state. Failed and cancelled items are
    /// counted, but their bytes are not.
    public struct Totals: Sendable, Equatable {
        /// The bytes in the files so far of every item whose length is known and that did not fail
        /// and was not cancelled (completed ones included): the bytes `expected` counts, so never
        /// more than it (`fraction` stays within `0...1`).
        public var received: Int64
        /// The sum of the lengths known so far of the same items (completed items' sizes, running
        /// ones' totals).
        public var expected: Int64
        /// The bytes so far of the items left out of `received` because their length is not known
        /// (a server that sends no length, a restored `.part` before its response): all the bytes
        /// in the files are `received + receivedOfUnknownLength`.
        public var receivedOfUnknownLength: Int64
        /// Active items (pending, running, verifying) whose length is not known yet (pending ones,
        /// mostly): while there are some, `expected` leaves them out and `secondsRemaining` is nil.
        public var itemsOfUnknownLength: Int
        /// All downloads' speed, averaged over `Configuration.speedWindow`.
        public var bytesPerSecond: Double
        /// Seconds until every active item is done at that speed (suspended ones wait); nil while a
        /// length or the speed is unknown.
        public var secondsRemaining: Double?
        /// How many items are in each state, by `State.name`.
        public var pending = 0
        /// Running ones (verifying included).
        public var running = 0
        /// Suspended ones.
        public var suspended = 0
        /// Completed ones.
        public var completed = 0
        /// Failed ones.
        public var failed = 0
        /// Cancelled ones.
        public var cancelled = 0

        /// How many items there are, in every state.
        public var count: Int { pending + running + suspended + completed + failed + cancelled }

        /// `received / expected`, in `0...1`; nil while no length is known.
        public var fraction: Double? {
            guard expected > 0 else { return nil }
            return min(max(Double(received) / Double(expected), 0), 1)
        }

        /// Totals with these bytes and speed and no item counted (add the counts after); made by
        /// hand for tests.
        package init(
            received: Int64 = 0, expected: Int64 = 0, receivedOfUnknownLength: Int64 = 0, itemsOfUnknownLength: Int = 0,
            bytesPerSecond: Double = 0, secondsRemaining: Double? = nil
        ) {
            self.received = received
            self.expected = expected
            self.receivedOfUnknownLength = receivedOfUnknownLength
            self.itemsOfUnknownLength = itemsOfUnknownLength
            self.bytesPerSecond = bytesPerSecond
            self.secondsRemaining = secondsRemaining
        }
    }
}
