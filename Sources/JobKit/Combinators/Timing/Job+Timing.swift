extension Job {
    /// Starts this job `delay` after the run starts. Cancelling during the delay cancels the timer;
    /// the job then never starts.
    public func delay(_ delay: Duration, scheduler: any JobScheduler = .dispatch) -> Job<Value> {
        let inner = Nested(self)
        return Job { controller in
            let children = ChildRuns(of: controller)
            children.schedule(after: delay, on: scheduler) {
                children.start(inner.value, progress: .whole) { controller.resolve($0) }
            }
        }
    }

    /// Fails with `JobError.timedOut` if this job has not completed within `limit`. The run in flight
    /// is cancelled first — its `onCancel` handlers have run by the time the handler hears of the
    /// timeout — and its late result is ignored. When the job completes in time, the timer is
    /// cancelled at once and releases what it holds.
    ///
    /// ```swift
    /// let product = loadProduct(id).timeout(.seconds(10))
    /// ```
    public func timeout(_ limit: Duration, scheduler: any JobScheduler = .dispatch) -> Job<Value> {
        let inner = Nested(self)
        return Job { controller in
            let race = RaceExecution(rule: .firstCompletion, count: 1, controller: controller)
            race.startTimer(after: limit, on: scheduler)
            race.start(inner.value, at: 0, progress: .whole)
        }
    }
}

extension Job where Value == Void {
    /// A job that finishes after `duration`.
    public static func sleep(for duration: Duration, scheduler: any JobScheduler = .dispatch) -> Job<Void> {
        Job<Void>.empty.delay(duration, scheduler: scheduler)
    }
}
