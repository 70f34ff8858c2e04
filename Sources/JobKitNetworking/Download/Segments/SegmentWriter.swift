import Foundation

/// Where one connection of a segmented download writes: its segment's range and the position the
/// next byte goes to. A value each connection keeps to itself (its callbacks come one at a time).
struct SegmentWriter {
    /// Thrown to stop a connection whose segment is complete (the first one, which asked for the
    /// file to its end).
    struct Finished: Error {}

    /// How a connection ended, for its download.
    enum Ending {
        /// Its segment is complete.
        case finished
        /// Its answer does not continue the file: the file starts over on one connection.
        case startOver
        /// It failed with this error: the download fails.
        case failed(any Error)
    }

    /// The segment's index in the map.
    let index: Int
    /// The bytes of the file it fetches.
    let range: Range<Int64>
    /// It asked for more than its range (to the file's end): it is stopped at the range's end.
    let stopsAtEnd: Bool
    /// Where its next byte goes.
    var position: Int64

    init(index: Int, range: Range<Int64>, stopsAtEnd: Bool) {
        self.index = index
        self.range = range
        self.stopsAtEnd = stopsAtEnd
        position = range.lowerBound
    }

    /// How many of `count` arriving bytes belong to the segment, and whether it is complete with
    /// them. More than the segment has left, on a connection that asked for exactly its range, fails.
    func take(_ count: Int, path: String) throws(DownloadError) -> (count: Int, completes: Bool) {
        let room = range.upperBound - position
        if Int64(count) > room, !stopsAtEnd {
            throw DownloadError(kind: .inconsistentResponse("more bytes than the range asked for"), path: path)
        }
        let taken = Int(min(Int64(count), room))
        return (taken, position + Int64(taken) == range.upperBound)
    }

    /// What the end of its transfer (with `error` when it failed) means.
    func ending(error: (any Error)?, url: URL, path: String) -> Ending {
        if position == range.upperBound { return .finished }
        if let error { return .failed(TransportError.readable(error, url: url)) }
        let written = position - range.lowerBound
        return .failed(
            DownloadError(
                kind: .inconsistentResponse("got \(written) of the \(range.count) bytes of a range"), path: path))
    }
}
