import Foundation

/// A one-line progress bar on stderr, redrawn in place; only when stderr is a terminal.
final class ProgressBar: @unchecked Sendable {
    private let enabled: Bool
    private let started = Date()
    private let lock = NSLock()

    init(quiet: Bool) {
        enabled = !quiet && isatty(STDERR_FILENO) != 0
    }

    /// `done` of `total` bytes, plus a free-form detail (e.g. "3/7 ranges").
    func update(done: Int64, total: Int64, detail: String) {
        guard enabled else { return }
        let elapsed = Date().timeIntervalSince(started)
        let fraction = total > 0 ? min(1, Double(done) / Double(total)) : 1
        let width = 24
        let filled = Int(fraction * Double(width))
        let rate = elapsed > 0 ? Double(done) / elapsed : 0
        let eta = rate > 0 && total > done ? String(format: " ETA %.0fs", Double(total - done) / rate) : ""
        let line = "\r[" + String(repeating: "#", count: filled) + String(repeating: ".", count: width - filled) + "] "
            + "\(Console.humanBytes(done))/\(Console.humanBytes(total))  \(detail)  \(Console.humanBytes(Int64(rate)))/s\(eta)\u{1B}[K"
        lock.withLock { FileHandle.standardError.write(Data(line.utf8)) }
    }

    func finish() {
        guard enabled else { return }
        lock.withLock { FileHandle.standardError.write(Data("\r\u{1B}[K".utf8)) }
    }
}
