import Foundation
import JobKit

extension DownloadManagerStateMachine {
    // MARK: Items

    enum Phase {
        /// Waiting; `ticket` orders it among the pending items (0: stopped by `close`, not queued).
        case pending(ticket: UInt64)
        case running(Run)
        case suspended
        /// Restored from the journal as pending, and not started (`startsRestoredItems` false):
        /// shown as suspended, kept pending in the journal, queued when added again or resumed.
        case held
        case completed(size: Int64)
        case failed(ItemError)
        case cancelled

        var isCancelled: Bool {
            if case .cancelled = self { return true }
            return false
        }
    }

    /// One run of an item: its generation tells its callbacks from a stale run's.
    struct Run {
        var generation: UInt64
        /// The bytes its download counted that the state has not taken (`fold`).
        let progress: RunProgress
        var handle: Handle?
        var verifying = false
        /// The scheduler's slots it holds: the connections it may open (`HostScheduler.claimNext`),
        /// fewer once its download said it uses fewer (`connectionsUsed`).
        var slots = 1
        /// Its download ended refused (401, 403, 410) and the URL refresher is being asked: it holds
        /// its slot but no file, so stopping it frees the name at once (and drops the answer).
        var refreshing = false
    }

    struct Entry {
        let id: ItemID
        /// Where it is fetched from: `replaceURL` and the `urlRefresher` change it.
        var url: URL
        let name: String
        /// The `host:port` it was last queued under (its URL's then): its queue slot and its run count there.
        var host: String
        let checksum: Checksum?
        var phase: Phase
        /// Bytes in the file (the `.part` while running), but for what its run counted since the
        /// last `fold` (`receivedNow` has both).
        var received: Int64 = 0
        var expected: Int64?
        /// Bytes moved by this process, only growing: the speed is measured on it (`transferredNow`:
        /// with what its run counted since the last `fold`).
        var transferred: Int64 = 0
        var meter: SpeedMeter
        /// A `finishing` record was written: the file under the name is the manager's to replace.
        var ownsFile = false
        /// The size the `finishing` record gave, for the completion.
        var finishingSize: Int64?
        /// The finished file may replace one under its name (`Request.replacesExistingFile`; not
        /// journaled: a restored item never replaces).
        var replacesFile = false
        /// Sent with every request (`Request.headers`; not journaled).
        var headers: [DownloadManager.Header] = []
        /// The connections it asks for (`Request.connections`, from 1 to `SegmentMap.maximumSegments`;
        /// not journaled).
        var connections = 1
        /// Its current run started from a URL the refresher gave, and no response has filled its
        /// `.part` since: a refusal now fails the item without asking the refresher again.
        var runsRefreshedURL = false
        /// A `.part` of it may be on disk: a run of it started in this process, the restore found one
        /// (an empty one too: a killed run makes its `.part` before the first byte), or it was added
        /// while its name was held (a stopped run's end may leave it the `.part`).
        var mayHavePart = false
        /// The completed download it replaces (`downloadAgain`): what the journal says of it until its
        /// new file is about to take the name (its `finishing` record, after the new URL's), and again
        /// if that fails; gone once the new file has the name.
        var previous: Previous?

        struct Previous: Equatable {
            /// The URL the completed file came from.
            var url: URL
            /// The completed file's size.
            var size: Int64
            /// The journal has the new URL and `finishing` (a failure now writes the old file's
            /// record back: `record`).
            var announced = false
        }

        /// The generation of its run, when it is running.
        var runningGeneration: UInt64? {
            if case .running(let run) = phase { return run.generation }
            return nil
        }

        /// What its run counted and the state has not taken yet.
        var unfolded: Int64 {
            if case .running(let run) = phase { return run.progress.bytes }
            return 0
        }

        var receivedNow: Int64 { received.addingSaturating(unfolded) }
        var transferredNow: Int64 { transferred.addingSaturating(unfolded) }

        /// The names of its `.part` and its metadata in the directory.
        var partFiles: [String] {
            let parts = PartNames(for: name)
            return [parts.part, parts.metadata]
        }
    }

    /// A run to start, outside the lock.
    struct Start: Equatable {
        let id: ItemID
        let generation: UInt64
        let url: URL
        let name: String
        let checksum: Checksum?
        /// The finished file may replace one under its name.
        let replacesFile: Bool
        /// Sent with every request of the run.
        var headers: [DownloadManager.Header] = []
        /// The connections the run may open (the slots it took).
        var connections = 1
        /// Where its download counts the bytes it writes.
        var progress: RunProgress
    }

    /// A validated request, before it is committed.
    enum Prepared: Equatable {
        case new(
            id: ItemID, url: URL, name: String, checksum: Checksum?, replacing: Bool,
            headers: [DownloadManager.Header] = [], connections: Int = 1)
        /// The same URL, name and checksum as an item the manager has: it takes these headers and
        /// connections.
        case existing(ItemID, replacing: Bool, headers: [DownloadManager.Header], connections: Int = 1)
        /// A completed item of the name and checksum, from another URL, that the request replaces
        /// (`replacesExistingFile`): downloaded again from `url` (`downloadAgain`).
        case again(ItemID, url: URL, headers: [DownloadManager.Header], connections: Int = 1)

        /// A new item (the journal records it).
        var isNew: Bool {
            if case .new = self { return true }
            return false
        }
    }

    /// How a run ended.
    enum Outcome {
        case completed
        case failed(ItemError)
        /// Cancelled without the manager asking (it asks only after leaving `running`).
        case cancelled
    }
}

extension DownloadManagerStateMachine.Entry: Sendable where Handle: Sendable {}
extension DownloadManagerStateMachine.Phase: Sendable where Handle: Sendable {}
extension DownloadManagerStateMachine.Run: Sendable where Handle: Sendable {}
