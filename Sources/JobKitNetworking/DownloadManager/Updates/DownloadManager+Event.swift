extension DownloadManager {
    /// What happened to the items, in order. Never dropped or merged.
    public enum Event: Sendable, Equatable {
        /// The item changed state (an added or restored item's first event gives its first state);
        /// the item as it was then.
        case changed(Item)
        /// The item was removed.
        case removed(Item)
        /// The manager became idle: nothing pending, running or verifying. Sent once each time it
        /// drains, after the last item's final state.
        case allFinished(Summary)
    }
}
