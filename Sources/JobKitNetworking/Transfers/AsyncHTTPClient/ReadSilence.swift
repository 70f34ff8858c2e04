/// How long a transfer has heard nothing from its server while it was ready to hear: the read
/// timeout of an AsyncHTTPClient download, as a value.
///
/// Time counts only while the transfer reads. While it holds the connection back itself — a
/// speed limit's wait, a disk that is behind — the server cannot send, so its silence then is the
/// transfer's doing, not the server's: `paused` stops the count, and `resumed` starts it again from
/// zero. Pure: the times are the caller's (a `JobScheduler`'s `now`).
struct ReadSilence: Equatable {
    /// How long the server may stay silent while the transfer reads.
    let limit: Duration
    /// Since when it has been silent while the transfer read; nil: the transfer does not read now.
    private var since: Duration?

    /// A transfer that starts reading at `now`.
    init(limit: Duration, now: Duration) {
        self.limit = limit
        since = now
    }

    /// The server sent something at `now`.
    mutating func heard(at now: Duration) {
        if since != nil { since = now }
    }

    /// The transfer stopped reading (it waits on a speed limit, or on the disk): time stops counting.
    mutating func paused() { since = nil }

    /// The transfer reads again at `now`: the count starts from zero.
    mutating func resumed(at now: Duration) { since = now }

    /// When the silence reaches the limit, if the transfer keeps reading and hears nothing; nil
    /// while it does not read.
    var deadline: Duration? { since.map { $0 + limit } }

    /// Whether the server has been silent for the limit while the transfer read, at `now`.
    func hasExpired(at now: Duration) -> Bool {
        guard let deadline else { return false }
        return now >= deadline
    }
}
