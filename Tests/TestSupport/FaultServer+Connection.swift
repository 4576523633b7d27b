import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Serves one accepted connection on its own thread: reads requests in a keep-alive loop
/// and answers each according to its route's behavior.
struct FaultConnection {
    let core: FaultServerCore
    let fd: Int32
    /// 1-based accept order, recorded with each request.
    let number: Int

    init(core: FaultServerCore, fd: Int32, number: Int) {
        self.core = core
        self.fd = fd
        self.number = number
    }

    func run() {
        var reader = HTTPRequestReader(fd: fd)
        while !core.isStopped {
            switch reader.next() {
            case .closed:
                return
            case .malformed:
                _ = send(ResponsePlan.text(400, "bad request\n"), headOnly: false, keepAlive: false)
                finish()
                return
            case let .request(head):
                let recorded = RecordedRequest(
                    connection: number, method: head.method,
                    path: head.target, headers: head.headers)
                let plan: ResponsePlan
                if let (behavior, index) = core.recordAndResolve(recorded) {
                    plan = behavior.plan(for: head, index: index)
                } else {
                    plan = .text(404, "not found: \(head.target)\n")
                }
                let keepAlive = head.wantsKeepAlive
                let reusable = send(plan, headOnly: head.method == "HEAD", keepAlive: keepAlive)
                guard reusable && keepAlive else {
                    finish()
                    return
                }
            }
        }
    }

    /// Half-close before the owner closes the fd: the client then reads every byte already
    /// sent followed by EOF, instead of a reset that could discard data in flight.
    private func finish() {
        _ = shutdown(fd, Int32(SHUT_WR))
    }

    /// Sends `plan`; true if the connection can carry another request.
    private func send(_ plan: ResponsePlan, headOnly: Bool, keepAlive: Bool) -> Bool {
        if plan.delay > 0 && !core.sleep(plan.delay) { return false }

        // Faults announce keep-alive like a healthy response would: a real drop mid-body
        // is a surprise to the client, not something the server warns about.
        var head = "HTTP/1.1 \(plan.status) \(HTTPStatus.reason(plan.status))\r\n"
        for (name, value) in plan.headers { head += "\(name): \(value)\r\n" }
        if plan.closeDelimited {
            head += "Connection: close\r\n\r\n"
        } else {
            head += "Content-Length: \(plan.contentLength)\r\n"
            head += "Connection: \(keepAlive ? "keep-alive" : "close")\r\n\r\n"
        }
        let headSent = Array(head.utf8).withUnsafeBytes { LoopbackSocket.sendAll(fd, $0) }
        guard headSent else { return false }
        if headOnly { return plan.dropAfter == nil }

        let limit = min(plan.contentLength, plan.dropAfter ?? Int.max, plan.bodyRange.count)
        var sent = 0
        var stalls = plan.stalls[...]
        let ok = plan.body.withUnsafeBytes { body -> Bool in
            let base = body.baseAddress.map { $0 + plan.bodyRange.lowerBound }
            while true {
                // Pause at every stall point we have reached (including offset 0).
                while let stall = stalls.first, stall.offset <= sent {
                    stalls = stalls.dropFirst()
                    if !core.sleep(stall.seconds) { return false }
                }
                if sent >= limit { return true }
                var end = min(limit, sent + 256 * 1024)
                if let stall = stalls.first { end = min(end, stall.offset) }
                if let rate = plan.dripBytesPerSecond {
                    end = min(end, sent + 1)
                    if !core.sleep(1 / Double(rate)) { return false }
                }
                guard let base else { return true }
                let chunk = UnsafeRawBufferPointer(start: base + sent, count: end - sent)
                guard LoopbackSocket.sendAll(fd, chunk) else { return false }
                sent = end
            }
        }
        return ok && plan.dropAfter == nil && !plan.closeDelimited
    }
}
