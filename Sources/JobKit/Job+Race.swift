/// Every member of `Job.firstSuccess` failed: their errors, in input order.
public struct AllJobsFailed: Error, CustomStringConvertible {
    public let errors: [any Error]

    public var description: String {
        "all \(errors.count) jobs failed: " + errors.map { "\($0)" }.joined(separator: "; ")
    }
}

extension Job {
    /// Runs all `jobs` at once; the first to complete — with a value or an error — decides, and the
    /// others are cancelled.
    public static func race(_ jobs: [Job<Value>]) -> Job<Value> {
        precondition(!jobs.isEmpty, "JobKit: race needs at least one job")
        return Job { controller in
            let children = ChildRuns(of: controller)
            for job in jobs {
                children.start(job) { result in
                    controller.resolve(result)
                    children.cancelAll()
                }
            }
        }
    }

    /// Runs all `jobs` at once; the first success decides, and the others are cancelled. Fails only
    /// when every job failed, with `AllJobsFailed` holding every error in input order.
    public static func firstSuccess(_ jobs: [Job<Value>]) -> Job<Value> {
        precondition(!jobs.isEmpty, "JobKit: firstSuccess needs at least one job")
        return Job { controller in
            let children = ChildRuns(of: controller)
            let errors = LockedBox.make([(any Error)?](repeating: nil, count: jobs.count))
            for (index, job) in jobs.enumerated() {
                children.start(job) { result in
                    switch result {
                    case .success:
                        controller.resolve(result)
                        children.cancelAll()
                    case .failure(let error):
                        let all = errors.withLock { errors -> [any Error]? in
                            errors[index] = error
                            let failed = errors.compactMap { $0 }
                            return failed.count == jobs.count ? failed : nil
                        }
                        if let all { controller.resolve(.failure(AllJobsFailed(errors: all))) }
                    }
                }
            }
        }
    }
}
