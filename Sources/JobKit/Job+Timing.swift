extension Job {
    /// Starts this job `delay` after the run starts. Cancelling during the delay cancels the timer;
    /// the job then never starts.
    public func delay(_ delay: Duration, scheduler: any JobScheduler = .dispatch) -> Job<Value> {
        Job { controller in
            let children = ChildRuns(of: controller)
            children.schedule(after: delay, on: scheduler) {
                children.start(self, progress: { $0 }) { controller.resolve($0) }
            }
        }
    }

    /// Fails with `JobError.timedOut` if this job has not completed within `limit`, and then
    /// cancels the run in flight: its `onCancel` handlers run, and its late result is ignored.
    ///
    /// ```swift
    /// let product = loadProduct(id).timeout(.seconds(10))
    /// ```
    public func timeout(_ limit: Duration, scheduler: any JobScheduler = .dispatch) -> Job<Value> {
        Job { controller in
            let children = ChildRuns(of: controller)
            children.schedule(after: limit, on: scheduler) {
                controller.resolve(.failure(JobError.timedOut))
                children.cancelAll()
            }
            children.start(self, progress: { $0 }) { result in
                controller.resolve(result)
                children.cancelAll()  // the timer
            }
        }
    }
}

extension Job where Value == Void {
    /// A job that finishes after `duration`.
    public static func sleep(for duration: Duration, scheduler: any JobScheduler = .dispatch) -> Job<Void> {
        Job<Void>.empty.delay(duration, scheduler: scheduler)
    }
}
