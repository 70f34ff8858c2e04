import Foundation
import JobKit
import Logging
import Tracing

@testable import JobKitNetworking

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The network of one simulated process, for the real `DownloadManager`: a request is only recorded
/// when it starts; each of its callbacks (the response, a piece of the body, the end) is an event the
/// simulation picks when its seed says so (`step(_:server:random:)`), on the process's queue. A
/// cancelled transfer's next event ends it as cancelled, as a client does. A killed process's
/// transfers are dropped (`dropAll()`): nothing of them ever arrives.
///
/// The server answers through `SimulatedServer` (a redirect is followed as a client does: the
/// response names the mirror's URL).
// Safety: used only on its process's serial queue (the downloads start requests there, the
// simulation steps them there), so its state needs no lock.
final class SimulatedTransport: HTTPTransport, @unchecked Sendable {
    /// One request, and how far its answer got.
    final class Transfer: @unchecked Sendable {
        let request: URLRequest
        let handler: TransferHandler
        /// Set by the run's cancel (on the queue, inline).
        var cancelled = false
        /// The speed limit, and its wait while the transfer may not read on.
        let throttle: Throttle?
        var wait: Throttle.Wait?
        var paused = false
        /// Nil until answered.
        var answer: SimulatedServer.Response?
        var response: HTTPURLResponse?
        var sent = 0

        init(request: URLRequest, handler: TransferHandler, throttle: Throttle?) {
            self.request = request
            self.handler = handler
            self.throttle = throttle
        }
    }

    /// The transfers that have not ended, oldest first.
    private(set) var transfers: [Transfer] = []
    /// The requests started since the simulation last took them, for its log.
    var started: [String] = []

    func start(
        _ request: URLRequest, handler: TransferHandler, for controller: Job<URL>.Controller,
        context: ServiceContext?, logger: Logger?, throttle: Throttle?
    ) {
        let transfer = Transfer(request: request, handler: handler, throttle: throttle)
        let range = request.value(forHTTPHeaderField: "Range").map { " \($0)" } ?? ""
        let ifRange = request.value(forHTTPHeaderField: "If-Range").map { " If-Range \($0)" } ?? ""
        started.append("GET \(request.url!.absoluteString)\(range)\(ifRange)")
        transfers.append(transfer)
        controller.onCancel {
            transfer.cancelled = true
            transfer.paused = false
            if let wait = transfer.wait { transfer.throttle?.cancel(wait) }
        }
    }

    /// The transfers with a callback to come now (not waiting for their speed limit).
    var ready: [Transfer] { transfers.filter { !$0.paused } }

    /// A killed process's network: nothing more arrives.
    func dropAll() { transfers = [] }

    /// Delivers the next callback of `transfer`: its response, a piece of its body, or its end.
    /// Returns what happened, for the schedule's log.
    func step(_ transfer: Transfer, server: SimulatedServer, random: inout SimulationRandom) -> String {
        let handler = transfer.handler
        let url = transfer.request.url!.absoluteString
        guard !transfer.cancelled else {
            end(transfer, error: URLError(.cancelled))
            return "cancelled"
        }
        guard let answer = transfer.answer, transfer.response != nil else {
            var headers: [String: String] = [:]
            for name in ["Range", "If-Range"] { headers[name] = transfer.request.value(forHTTPHeaderField: name) }
            let answer = server.respond(to: url, headers: headers, random: &random)
            let answered = answer.note.hasSuffix("(redirected)") ? SimulatedServer.mirror(of: url) : url
            var fields = Dictionary(uniqueKeysWithValues: answer.headers.map { ($0.key.capitalized, $0.value) })
            fields["Content-Length"] = fields["Content-Length"] ?? String(answer.body.count)
            let response = HTTPURLResponse(
                url: URL(string: answered)!, statusCode: answer.status, httpVersion: "HTTP/1.1", headerFields: fields)!
            transfer.answer = answer
            transfer.response = response
            handler.expected = response.expectedContentLength
            do {
                guard try handler.onResponse(response) else {
                    end(transfer, error: handler.failure ?? URLError(.cancelled))
                    return "\(answer.note): refused"
                }
            } catch {
                handler.failure = error
                end(transfer, error: error)
                return "\(answer.note): refused (\(error))"
            }
            return answer.note + (answer.lie.map { " (lies: \($0))" } ?? "")
        }
        let rest = answer.body.count - transfer.sent
        // A dropped connection ends somewhere in the body.
        if rest == 0 || (answer.drops && random.chance(30)) {
            end(transfer, error: answer.drops ? URLError(.networkConnectionLost) : nil)
            return answer.drops ? "dropped at \(transfer.sent)" : "ended at \(transfer.sent)"
        }
        let count = random.int(1...min(rest, 4096))
        let piece = Data(answer.body[transfer.sent..<transfer.sent + count])
        transfer.sent += count
        handler.received += Int64(count)
        do {
            try handler.onData(piece)
            if let throttle = transfer.throttle {
                // As a client does: the next read waits for the limit (resumed from the scheduler, on
                // the queue).
                transfer.paused = true
                transfer.wait = throttle.consumed(count) {
                    transfer.paused = false
                    transfer.wait = nil
                }
                if transfer.wait == nil { transfer.paused = false }
            }
        } catch {
            handler.failure = error
            end(transfer, error: error)
            return "\(count) bytes, refused (\(error))"
        }
        return "\(count) bytes"
    }

    private func end(_ transfer: Transfer, error: (any Error)?) {
        transfers.removeAll { $0 === transfer }
        transfer.handler.onComplete(transfer.response, error)
    }
}
