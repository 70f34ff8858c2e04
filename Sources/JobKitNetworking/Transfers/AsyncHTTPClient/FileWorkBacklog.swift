/// The file work of one download waiting for the blocking thread pool: handed over in order, one
/// batch at a time (everything that waits when the batch before finished), with the body bytes
/// not yet written counted, for backpressure.
///
/// A value with no lock: its owner (`HTTPClientTransfer`) keeps it on one event loop.
struct FileWorkBacklog<Work> {
    private var waiting: [Work] = []
    private var waitingBytes = 0
    /// The body bytes of the batch being run; nil when none is.
    private var runningBytes: Int?

    /// The body bytes waiting or being written.
    var bytes: Int { waitingBytes + (runningBytes ?? 0) }

    /// Nothing waits and no batch runs.
    var isIdle: Bool { runningBytes == nil && waiting.isEmpty }

    /// Queues `work`, which carries `bytes` of body; returns the batch to run now, when none runs.
    mutating func add(_ work: Work, bytes: Int) -> [Work]? {
        waiting.append(work)
        waitingBytes += bytes
        return runningBytes == nil ? takeBatch() : nil
    }

    /// The running batch finished; returns the next one to run, when work waits.
    mutating func batchFinished() -> [Work]? {
        precondition(runningBytes != nil, "FileWorkBacklog: a batch finished while none was running")
        runningBytes = nil
        return waiting.isEmpty ? nil : takeBatch()
    }

    private mutating func takeBatch() -> [Work] {
        let batch = waiting
        runningBytes = waitingBytes
        waiting = []
        waitingBytes = 0
        return batch
    }
}
