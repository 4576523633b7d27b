import Foundation

/// `serve`'s log lines, written to stderr in batches: a line a request would otherwise cost a
/// write(2) each, a tenth of a cached range's CPU. A writer thread takes what has gathered every
/// `interval` seconds, or at once past `batchBytes`; `close()` writes the rest and ends it (a
/// crash loses at most the last `interval`'s lines).
final class LogBuffer: @unchecked Sendable {  // every var below is guarded by `condition`
    private let interval: Double
    private let batchBytes: Int
    private let condition = NSCondition()
    private var pending = ""
    private var closed = false
    private let done = DispatchSemaphore(value: 0)

    init(interval: Double = 0.1, batchBytes: Int = 64 << 10) {
        self.interval = interval
        self.batchBytes = batchBytes
        let thread = Thread { [self] in run() }
        thread.name = "mprobe.log"
        thread.start()
    }

    func write(_ line: String) {
        condition.lock()
        pending += line
        pending += "\n"
        if pending.utf8.count >= batchBytes { condition.signal() }
        condition.unlock()
    }

    /// Writes what has gathered now (before a line written around the buffer, or at the end).
    func flush() {
        condition.lock()
        let text = pending
        pending = ""
        if !text.isEmpty { Console.writeStderr(text) }
        condition.unlock()
    }

    /// Writes the rest and ends the writer; lines written after it go straight to stderr.
    func close() {
        condition.lock()
        let first = !closed
        closed = true
        condition.signal()
        condition.unlock()
        if first { done.wait() }
    }

    private func run() {
        condition.lock()
        while !closed {
            _ = condition.wait(until: Date().addingTimeInterval(interval))
            if !pending.isEmpty {
                // Written under the lock, so that lines keep their order with `flush`.
                Console.writeStderr(pending)
                pending = ""
            }
        }
        condition.unlock()
        done.signal()
    }
}
