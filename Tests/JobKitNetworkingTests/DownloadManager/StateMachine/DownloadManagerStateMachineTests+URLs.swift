import Foundation
import JobKitTestSupport
import Testing

@testable import JobKitNetworking

/// `replaceURL`, the URL refresher's answers and the headers of a request, in the state machine alone.
extension DownloadManagerStateMachineTests {
    static let refusal = DownloadManager.ItemError(kind: .httpStatus, message: "HTTP 403", status: 403)

    @Test func replacingARunningItemsURLStopsItsRunAndStartsItFromTheNewURLOnceTheRunEnds() throws {
        var machine = machine(limit: 1)
        let (ids, added) = try add([request("a")], to: &machine)
        let first = added.starts[0]
        #expect(machine.attach(7, to: ids[0], generation: first.generation) == nil)
        let fresh = URL(string: "https://b.example:8443/a?signed=2")!
        let replaced = try machine.replaceURL(ids[0], with: fresh, now: 1)

        #expect(replaced.cancels == [7])
        #expect(replaced.starts.isEmpty, "the old run still holds the .part")
        #expect(replaced.writesJournal)
        guard case .append(let records) = machine.takeJournal() else {
            Issue.record("no journal write")
            return
        }
        #expect(records.last == .url(ids[0].rawValue, fresh))
        #expect(states(machine) == ["pending"])
        let ended = machine.runEnded(ids[0], generation: first.generation, .cancelled, now: 2)
        #expect(ended.starts.isEmpty && ended.unlinks.isEmpty, "the .part stays for the new URL")
        let next = machine.cleaned(ended.cleaning, now: 3)
        #expect(next.starts.map(\.url) == [fresh])
        #expect(machine.scheduler.running(on: "b.example:8443") == 1)
        #expect(machine.scheduler.running(on: "a.example") == 0)
    }

    @Test func replacingAPendingOrStoppedItemsURLKeepsItsState() throws {
        var machine = machine(limit: 1)
        let (ids, _) = try add([request("a"), request("b"), request("c")], to: &machine)
        _ = try machine.suspend(ids[2], now: 0)
        let fresh = URL(string: "https://c.example/x")!
        #expect(try machine.replaceURL(ids[1], with: fresh, now: 1).starts.isEmpty)
        #expect(machine.scheduler.queued(for: "c.example") == [ids[1]])
        #expect(machine.scheduler.queued(for: "a.example").isEmpty)
        _ = try machine.replaceURL(ids[2], with: fresh, now: 1)
        #expect(states(machine) == ["running", "pending", "suspended"])
        #expect(machine.item(ids[2], now: 1).url == fresh)
        #expect(throws: DownloadManagerError.unsupportedURL("ftp://c.example/x")) {
            try machine.replaceURL(ids[2], with: URL(string: "ftp://c.example/x")!, now: 1)
        }
        #expect(throws: DownloadManagerError.unknownItem(ItemID(rawValue: 99))) {
            try machine.replaceURL(ItemID(rawValue: 99), with: fresh, now: 1)
        }
    }

    @Test func aRefreshedURLRequeuesTheItemAndARefusalBeforeAnyResponseIsNotRefreshedAgain() throws {
        var machine = machine(limit: 1)
        let (ids, added) = try add([request("a")], to: &machine)
        let generation = added.starts[0].generation
        #expect(machine.mayRefresh(ids[0], generation: generation))
        let fresh = URL(string: "https://a.example/a?signed=2")!
        let refreshed = machine.refreshed(
            ids[0], generation: generation, url: fresh, failure: Self.refusal, now: 1)
        let second = try #require(refreshed.starts.first)
        #expect(second.url == fresh)
        #expect(!machine.mayRefresh(ids[0], generation: second.generation), "refused again at once: no loop")
        // A response fills the .part: a later refusal (the URL expired again) may ask again.
        _ = machine.began(ids[0], generation: second.generation, offset: 0, total: 10, now: 2)
        #expect(machine.mayRefresh(ids[0], generation: second.generation))
        #expect(!machine.mayRefresh(ids[0], generation: generation), "a stale run never asks")
    }

    @Test func noURLFromTheRefresherFailsTheItemAndAStaleAnswerIsDropped() throws {
        var machine = machine(limit: 2)
        let (ids, added) = try add([request("a"), request("b")], to: &machine)
        _ = machine.refreshed(ids[0], generation: added.starts[0].generation, url: nil, failure: Self.refusal, now: 1)
        #expect(machine.item(ids[0], now: 1).state == .failed(Self.refusal))
        let local = URL(fileURLWithPath: "/etc/passwd")
        _ = machine.refreshed(ids[1], generation: added.starts[1].generation, url: local, failure: Self.refusal, now: 1)
        #expect(
            machine.item(ids[1], now: 1).state.failure?.message.contains(
                "only http and https URLs with a host are supported") == true)
        #expect(machine.item(ids[1], now: 1).url == URL(string: "https://a.example/b")!)
        // Suspended while the refresher ran: its answer changes nothing.
        _ = try machine.resume(ids[1], now: 2)
        let generation = try #require(machine.items[ids[1]]?.runningGeneration)
        _ = try machine.suspend(ids[1], now: 3)
        let stale = machine.refreshed(
            ids[1], generation: generation, url: URL(string: "https://a.example/c")!, failure: Self.refusal, now: 4)
        #expect(stale.starts.isEmpty)
        #expect(machine.item(ids[1], now: 4).url == URL(string: "https://a.example/b")!)
        #expect(states(machine) == ["failed", "suspended"])
    }

    /// What is done to an item whose run waits for the URL refresher.
    enum ControlDuringRefresh: CaseIterable, Sendable {
        case suspendThenResume, cancelThenResume, removeThenAddAgain, replaceURL
    }

    @Test(arguments: ControlDuringRefresh.allCases)
    func aRunWaitingForTheRefresherHoldsNoNameSoAControlTakesEffectAtOnceAndDropsTheAnswer(
        _ control: ControlDuringRefresh
    ) throws {
        var machine = machine(limit: 1)
        let (ids, added) = try add([request("a")], to: &machine)
        let generation = added.starts[0].generation
        #expect(machine.attach(7, to: ids[0], generation: generation) == nil)
        let asks = machine.beginRefresh(ids[0], generation: generation)
        #expect(asks)
        #expect(machine.isRefreshing(ids[0], generation: generation))
        #expect(states(machine) == ["running"], "it holds its slot while the refresher runs")

        var stopped: Machine.Actions
        var started: Machine.Actions
        var id = ids[0]
        let fresh = URL(string: "https://b.example/a?signed=2")!
        switch control {
        case .suspendThenResume:
            stopped = try machine.suspend(id, now: 1)
            #expect(states(machine) == ["suspended"])
            started = try machine.resume(id, now: 2)
        case .cancelThenResume:
            stopped = try machine.cancel(id, now: 1)
            #expect(stopped.unlinks == ["a.part", "a.part.meta"])
            started = machine.cleaned(stopped.cleaning, now: 2)
            started.merge(try machine.resume(id, now: 2))
        case .removeThenAddAgain:
            stopped = try machine.remove(id, deletingFile: false, now: 1)
            #expect(stopped.unlinks == ["a.part", "a.part.meta"])
            let (again, added) = try add([request("a")], to: &machine, now: 2)
            id = again[0]
            started = added
            started.merge(machine.cleaned(stopped.cleaning, now: 2))
        case .replaceURL:
            stopped = try machine.replaceURL(id, with: fresh, now: 1)
            started = Machine.Actions()
        }
        #expect(stopped.dropsRefreshes == [generation], "the refresher's task is cancelled")
        #expect(!machine.isRefreshing(ids[0], generation: generation))
        #expect(machine.nameGuard.stoppedRunCount == 0, "the run ended before the refresher was asked")
        started.merge(stopped)
        let start = try #require(started.starts.first, "it starts at once: no stopped run holds its name")
        #expect(start.id == id)
        #expect(start.url == (control == .replaceURL ? fresh : URL(string: "https://a.example/a")!))
        #expect(states(machine) == ["running"])

        // The refresher answers late: its answer is dropped.
        let late = machine.refreshed(
            ids[0], generation: generation, url: URL(string: "https://a.example/late")!, failure: Self.refusal, now: 3)
        #expect(late.starts.isEmpty && late.unlinks.isEmpty && late.cleaning.isEmpty && late.cancels.isEmpty)
        #expect(machine.item(id, now: 3).url == start.url)
        #expect(machine.items[id]?.runningGeneration == start.generation)
        #expect(machine.nameGuard.isEmpty)
    }

    @Test func closingDropsTheRefreshersAnswers() throws {
        var machine = machine(limit: 2)
        let (ids, added) = try add([request("a"), request("b")], to: &machine)
        let asking = added.starts[0].generation
        let asks = machine.beginRefresh(ids[0], generation: asking)
        #expect(asks)
        let closed = machine.close(now: 1)
        #expect(closed.dropsRefreshes == [asking], "only the run waiting for the refresher")
        #expect(!machine.isRefreshing(ids[0], generation: asking))
        let late = machine.refreshed(
            ids[0], generation: asking, url: URL(string: "https://a.example/late")!, failure: Self.refusal, now: 2)
        #expect(late.starts.isEmpty && !late.writesJournal)
        #expect(machine.item(ids[0], now: 2).url == URL(string: "https://a.example/a")!)
    }

    @Test func headersGoWithEveryRunAndAReAddSetsThem() throws {
        var machine = machine(limit: 1)
        let token = try DownloadManager.Header("Authorization", "Bearer 1")
        var first = request("a")
        first.headers = [token]
        let (ids, added) = try add([first], to: &machine)
        #expect(added.starts.first?.headers == [token])
        _ = machine.runEnded(ids[0], generation: added.starts[0].generation, .failed(Self.refusal), now: 1)
        var again = request("a")
        again.headers = [try DownloadManager.Header("Authorization", "Bearer 2")]
        let (sameIDs, resumed) = try add([again], to: &machine)
        #expect(sameIDs == ids)
        #expect(resumed.starts.first?.headers == again.headers)
        var many = request("m")
        many.headers = Array(repeating: token, count: DownloadManager.Header.maximumCount + 1)
        #expect(throws: DownloadManagerError.self) { try machine.prepare([many]) }
    }
}

/// Issue 31: a port beyond 65535, from the API's arguments or the URL refresher, never reaches a transport.
extension DownloadManagerStateMachineTests {
    @Test func aPortBeyond65535IsRefusedFromAddReplaceURLAndTheRefresher() throws {
        var machine = machine(limit: 1)
        let bad = URL(string: "http://127.0.0.1:99999/x")!
        #expect(
            throws: DownloadManagerError.invalidURL(
                "http://127.0.0.1:99999/x", reason: "the port '99999' is not a number from 1 to 65535")
        ) {
            try machine.prepare([DownloadManager.Request(url: bad)])
        }
        let (ids, added) = try add([request("a")], to: &machine)
        #expect(throws: DownloadManagerError.self) {
            try machine.replaceURL(ids[0], with: URL(string: "http://[::1]:70000/y")!, now: 1)
        }
        let refreshed = machine.refreshed(
            ids[0], generation: added.starts[0].generation, url: URL(string: "http://127.0.0.1:70000/y")!,
            failure: Self.refusal, now: 1)
        #expect(refreshed.starts.isEmpty)
        let failure = try #require(machine.item(ids[0], now: 1).state.failure)
        #expect(failure.message.contains("http://127.0.0.1:70000/y: the port '70000' is not a number from 1 to 65535"))
        #expect(machine.item(ids[0], now: 1).url == URL(string: "https://a.example/a")!)
    }
}
