extension DownloadManager {
    /// Where every item ended up: the payload of `Event.allFinished` and `waitUntilFinished()`.
    public struct Summary: Sendable, Equatable {
        /// Every item (completed, failed, cancelled, suspended — or active, for a summary taken by
        /// `close()` or a cancelled wait), in the order added.
        public var items: [Item]
        /// Every item added up, as the summary was taken.
        public var totals: Totals

        /// A summary made by hand (for tests); see the properties.
        package init(items: [Item], totals: Totals) {
            self.items = items
            self.totals = totals
        }

        /// The completed items.
        public var completed: [Item] { items.filter { $0.state == .completed } }
        /// The failed items; each one's `state` carries its `ItemError`.
        public var failed: [Item] { items.filter { if case .failed = $0.state { true } else { false } } }
        /// The cancelled items.
        public var cancelled: [Item] { items.filter { $0.state == .cancelled } }
        /// The suspended items.
        public var suspended: [Item] { items.filter { $0.state == .suspended } }
        /// Whether every item completed.
        public var allSucceeded: Bool { items.allSatisfy { $0.state == .completed } }
    }
}
