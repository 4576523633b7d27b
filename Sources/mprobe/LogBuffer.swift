import Foundation

/// `serve`'s log lines, written to stderr in batches: a line a request would otherwise cost a
/// write(2) each, a tenth of a cached range's CPU. A writer thread takes what has gathered every
/// `interval` seconds, or at once past `batchBytes`; `close()` writes the rest and ends it (a
/// crash loses at most the last `interval`'s lines).
final class LogBuffer: @unchecked Sendable {  // every var below is guarded by `condition`
    private let interval: Double
    private let batchBytes: Int
    private let condition = NSCondition()
    private let writing = NSLock()
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
    /// The lines are taken under `condition` and written under `writing` only, so that a slow
    /// stderr (a file on a busy disk) never holds up the event loops that log; `writing` is
    /// taken first, so that batches go out in the order they were taken.
    func flush() {
        writing.lock()
        defer { writing.unlock() }
        condition.lock()
        let text = pending
        pending = ""
        condition.unlock()
        if !text.isEmpty { Console.writeStderr(text) }
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
        while true {
            condition.lock()
            if !closed { _ = condition.wait(until: Date().addingTimeInterval(interval)) }
            let ending = closed
            condition.unlock()
            flush()
            if ending { break }
        }
        done.signal()
    }
}
