import Foundation
import Support

/// A one-line progress bar on stderr, redrawn in place; only when stderr is a terminal.
final class ProgressBar: Sendable {
    private let enabled: Bool
    private let started = Date()
    /// Held while a line is written: the workers' updates do not interleave on the terminal.
    private let writing = BlockingLock(())

    init(quiet: Bool) {
        enabled = !quiet && isatty(STDERR_FILENO) != 0
    }

    /// `done` of `total` bytes, plus a free-form detail (e.g. "3 ranges"), the rate and an ETA.
    func update(done: Int64, total: Int64, detail: String) {
        let elapsed = Date().timeIntervalSince(started)
        let rate = elapsed > 0 ? Double(done) / elapsed : 0
        let eta = rate > 0 && total > done ? String(format: " ETA %.0fs", Double(total - done) / rate) : ""
        update(
            fraction: total > 0 ? Double(done) / Double(total) : 1,
            text:
                "\(Console.humanBytes(done))/\(Console.humanBytes(total))  \(detail.isEmpty ? "" : detail + "  ")\(Console.humanBytes(Int64(rate)))/s\(eta)"
        )
    }

    /// A bar filled to `fraction` followed by `text`.
    func update(fraction: Double, text: String) {
        let width = 24
        let filled = Int(min(1, max(0, fraction)) * Double(width))
        update(
            text: "[" + String(repeating: "#", count: filled) + String(repeating: ".", count: width - filled) + "] "
                + text)
    }

    /// Just `text`, for work whose total is not known (a list read as it goes).
    func update(text: String) {
        guard enabled else { return }
        writing.withLock { _ in Console.writeStderr("\r" + text + "\u{1B}[K") }
    }

    func finish() {
        guard enabled else { return }
        writing.withLock { _ in Console.writeStderr("\r\u{1B}[K") }
    }
}
