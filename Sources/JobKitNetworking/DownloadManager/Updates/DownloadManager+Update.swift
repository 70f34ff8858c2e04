extension DownloadManager {
    /// One delivery to `onUpdate`: the events since the previous one, and where everything is now.
    public struct Update: Sendable {
        /// Every event since the previous update, in the order they happened; none is ever dropped.
        public var events: [Event]
        /// Every item, in the order added, as it is now (newer than `events`' copies).
        public var items: [Item]
        /// All items added up, now.
        public var totals: Totals

        /// An update made by hand (for tests); see the properties.
        package init(events: [Event], items: [Item], totals: Totals) {
            self.events = events
            self.items = items
            self.totals = totals
        }
    }
}
