extension Job where Value == Void {
    /// Runs all `jobs` in parallel on the run's queue and finishes when all have finished.
    ///
    /// Fail-fast: the first error fails the group at once with that error, unwrapped; running members
    /// are cancelled and pending ones never start. Cancelling the group cancels its running members.
    ///
    /// ```swift
    /// let uploads = Job.group(photos.map { .uploading($0, using: uploader) }, maxConcurrent: 4)
    /// ```
    ///
    /// - Parameters:
    ///   - jobs: the members, started in this order; an empty list finishes at once.
    ///   - maxConcurrent: at most this many members run at once; the rest wait, in order,
    ///     without holding a thread. `nil` means no limit. Must be at least 1.
    /// - Returns: a job that finishes when every member finished, or fails with the first error.
    public static func group(_ jobs: [Job<Void>], maxConcurrent: Int? = nil) -> Job<Void> {
        JobGroup.job(jobs, policy: .failFast, maxConcurrent: maxConcurrent, keepsResults: false) { _ in () }
    }

    /// Runs `jobs` one after another, in order, on the run's queue; the first failure fails the
    /// sequence with that error and later jobs never start.
    ///
    /// It does not rely on the queue being serial, and runs in constant stack at any length.
    ///
    /// ```swift
    /// let publish = Job.sequence([.group(mediaUploads), .uploading(post, using: uploader)])
    /// ```
    public static func sequence(_ jobs: [Job<Void>]) -> Job<Void> {
        JobGroup.job(jobs, policy: .failFast, maxConcurrent: 1, keepsResults: false) { _ in () }
    }
}

extension Job {
    /// Like `group`, finishing with every member's value, in input order.
    public static func collect<Element>(_ jobs: [Job<Element>], maxConcurrent: Int? = nil) -> Job<[Element]>
    where Value == [Element] {
        JobGroup.job(jobs, policy: .failFast, maxConcurrent: maxConcurrent, keepsResults: true) { results in
            try results.map { try $0.get() }
        }
    }

    /// Runs every member to its end and never fails (unless cancelled): each member's own result,
    /// in input order.
    public static func settle<Element>(_ jobs: [Job<Element>], maxConcurrent: Int? = nil)
        -> Job<[Result<Element, any Error>]> where Value == [Result<Element, any Error>]
    {
        JobGroup.job(jobs, policy: .settle, maxConcurrent: maxConcurrent, keepsResults: true) { $0 }
    }
}
