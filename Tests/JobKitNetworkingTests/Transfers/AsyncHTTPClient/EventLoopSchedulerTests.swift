import Dispatch
import JobKit
import JobKitTestSupport
import NIOCore
import NIOPosix
import Testing

@testable import JobKitNetworking

@Suite struct EventLoopSchedulerTests {
    @Test func anActionRunsOnTheLoopAfterItsDelay() throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        defer { try? group.syncShutdownGracefully() }
        let scheduler = EventLoopScheduler(eventLoop: group.next())
        let ran = DispatchSemaphore(value: 0)
        let onLoop = LockedBox<Bool>.make(false)
        let start = scheduler.now
        let elapsed = LockedBox<Duration>.make(.zero)
        scheduler.schedule(after: .milliseconds(20)) {
            onLoop.withLock { $0 = MultiThreadedEventLoopGroup.currentEventLoop != nil }
            elapsed.withLock { $0 = scheduler.now - start }
            ran.signal()
        }
        #expect(wait(for: ran))
        #expect(onLoop.withLock { $0 })
        #expect(elapsed.withLock { $0 } >= .milliseconds(20))
    }

    @Test func aCancelledActionNeverRuns() throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        defer { try? group.syncShutdownGracefully() }
        let loop = group.next()
        let scheduler = EventLoopScheduler(eventLoop: loop)
        let runs = LockedBox<Int>.make(0)
        let action = scheduler.schedule(after: .milliseconds(10)) { runs.withLock { $0 += 1 } }
        action.cancel()
        action.cancel()
        // A later action on the same loop has run: the cancelled one's time has passed.
        let later = DispatchSemaphore(value: 0)
        scheduler.schedule(after: .milliseconds(30)) { later.signal() }
        #expect(wait(for: later))
        #expect(runs.withLock { $0 } == 0)
    }

    @Test func aNegativeDelayRunsAtOnceAndAnEndlessOneNever() throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        defer { try? group.syncShutdownGracefully() }
        let scheduler = EventLoopScheduler(eventLoop: group.next())
        let ran = DispatchSemaphore(value: 0)
        scheduler.schedule(after: .seconds(-5)) { ran.signal() }
        #expect(wait(for: ran))
        let endless = LockedBox<Bool>.make(false)
        let never = scheduler.schedule(after: .seconds(Int64.max)) { endless.withLock { $0 = true } }
        let also = scheduler.schedule(after: Duration(secondsComponent: Int64.max, attosecondsComponent: 0)) {
            endless.withLock { $0 = true }
        }
        let later = DispatchSemaphore(value: 0)
        scheduler.schedule(after: .milliseconds(20)) { later.signal() }
        #expect(wait(for: later))
        #expect(!endless.withLock { $0 })
        never.cancel()
        also.cancel()
    }
}
