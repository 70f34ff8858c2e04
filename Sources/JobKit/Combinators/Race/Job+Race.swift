/// Every member of `Job.firstSuccess` failed: their errors, in input order.
public struct AllJobsFailed: Error, CustomStringConvertible {
    /// Each member's own error, in the order the members were given.
    public let errors: [any Error]

    public var description: String {
        "all \(errors.count) jobs failed: " + errors.map { "\($0)" }.joined(separator: "; ")
    }
}

extension Job {
    /// Runs all `jobs` at once; the first to complete — with a value or an error — decides, and the
    /// others are cancelled before the race completes (their `onCancel` handlers have run by the time
    /// the handler hears the outcome).
    ///
    /// An empty array fails with `JobError.noJobs`.
    public static func race(_ jobs: [Job<Value>]) -> Job<Value> {
        guard !jobs.isEmpty else { return .failure(JobError.noJobs) }
        let members = Nested(jobs)
        return Job { controller in
            let jobs = members.value
            let race = RaceExecution(rule: .firstCompletion, count: jobs.count, controller: controller)
            for (index, job) in jobs.enumerated() { race.start(job, at: index) }
        }
    }

    /// Runs all `jobs` at once; the first success decides, and the others are cancelled first. Fails
    /// only when every job failed, with `AllJobsFailed` holding every error in input order.
    ///
    /// An empty array fails with `JobError.noJobs`.
    public static func firstSuccess(_ jobs: [Job<Value>]) -> Job<Value> {
        guard !jobs.isEmpty else { return .failure(JobError.noJobs) }
        let members = Nested(jobs)
        return Job { controller in
            let jobs = members.value
            let race = RaceExecution(rule: .firstSuccess, count: jobs.count, controller: controller)
            for (index, job) in jobs.enumerated() { race.start(job, at: index) }
        }
    }
}
