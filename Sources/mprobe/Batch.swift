import Foundation

/// Runs one job per item on up to `jobs` threads and hands results to `emit` in input order,
/// each as soon as it and all before it are done, so output streams but stays ordered.
///
/// Memory stays flat in the number of inputs: inputs are read as they are needed, at most
/// `window` results wait for their turn, and each is released once emitted. When stdout is gone
/// (`| head` closed it), no more work starts.
enum Batch {
    /// How many results may wait for a slow earlier one, per job slot.
    static let windowPerJob = 4

    /// `next` gives the items (inputs, or inputs with what the command derives from them in order);
    /// it is called on this thread only. Returns how many items there were.
    @discardableResult
    static func run<T: Sendable, R>(
        next: () -> T?, jobs: Int, work: @escaping @Sendable (Int, T) -> R,
        emit: (Int, T, R) -> Void
    ) -> Int {
        let jobs = max(1, jobs)
        let window = jobs * windowPerJob
        let board = ResultBoard<T, R>()
        let queue = DispatchQueue(label: "mprobe.batch", attributes: .concurrent)
        var started = 0, emitted = 0, exhausted = false
        while true {
            // Start what the slots and the window allow; reading the list may block (stdin), so
            // it happens here, between results, not under a lock.
            while !exhausted, !Console.stdoutGone, started - emitted < window, board.running < jobs {
                guard let input = next() else {
                    exhausted = true
                    break
                }
                let index = started
                started += 1
                board.willRun()
                queue.async { board.finish(index, input, work(index, input)) }
            }
            if Console.stdoutGone || (exhausted && emitted == started) { return started }
            // Wait for the next result in order, or for a slot to free up when more can start.
            let canStart = !exhausted && started - emitted < window
            guard let (input, result) = board.wait(for: emitted, orSlotBelow: canStart ? jobs : nil) else { continue }
            emit(emitted, input, result)
            emitted += 1
        }
    }
}

/// Finished results by input index, and how many jobs are running.
private final class ResultBoard<T, R>: @unchecked Sendable {
    // Guarded by `condition`.
    private var results: [Int: (T, R)] = [:]
    private var runningCount = 0
    private let condition = NSCondition()

    var running: Int { condition.withLock { runningCount } }

    func willRun() { condition.withLock { runningCount += 1 } }

    func finish(_ index: Int, _ input: T, _ result: R) {
        condition.withLock {
            results[index] = (input, result)
            runningCount -= 1
            condition.broadcast()
        }
    }

    /// The result of `index`, removed from the board; or nil as soon as fewer than `slots` jobs
    /// run (when the caller could start another).
    func wait(for index: Int, orSlotBelow slots: Int?) -> (T, R)? {
        condition.withLock {
            while true {
                if let found = results.removeValue(forKey: index) { return found }
                if let slots, runningCount < slots { return nil }
                condition.wait()
            }
        }
    }
}

/// The inputs of a batch command: operands first, then the lines of `-i FILE` (`-` for stdin,
/// and any readable path, such as `<(cmd)`), read lazily. Blank lines and `#` comments are skipped.
final class InputList {
    private var operands: IndexingIterator<[String]>
    private let lines: LineReader?
    /// True when the inputs are exactly one operand: output goes where a single input's goes.
    let isSingleOperand: Bool

    init(operands: [String], listFile: String?) throws {
        self.operands = operands.makeIterator()
        isSingleOperand = operands.count == 1 && listFile == nil
        if let listFile {
            do {
                lines = listFile == "-" ? LineReader(fd: STDIN_FILENO, owned: false) : try LineReader(path: listFile)
            } catch let error as LineReader.OpenError {
                throw UsageError("-i \(listFile): cannot read the input list: \(error.reason)")
            }
        } else {
            lines = nil
        }
    }

    func next() -> String? {
        if let operand = operands.next() { return operand }
        while let line = lines?.nextLine() {
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            if !trimmed.isEmpty && !trimmed.hasPrefix("#") { return trimmed }
        }
        return nil
    }
}

/// Lines of a file descriptor, read in blocks as they are asked for.
final class LineReader {
    struct OpenError: Error { let reason: String }

    private let fd: Int32
    private let owned: Bool
    private var buffer: [UInt8] = []
    private var atEnd = false

    init(fd: Int32, owned: Bool) {
        self.fd = fd
        self.owned = owned
    }

    convenience init(path: String) throws {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw OpenError(reason: String(cString: strerror(errno))) }
        // A directory opens, and reads as nothing: an empty list rather than the mistake it is.
        var st = stat()
        if fstat(fd, &st) == 0, st.st_mode & S_IFMT == S_IFDIR {
            close(fd)
            throw OpenError(reason: "it is a directory")
        }
        self.init(fd: fd, owned: true)
    }

    deinit { if owned { close(fd) } }

    func nextLine() -> String? {
        while true {
            if let newline = buffer.firstIndex(where: { $0 == 0x0A || $0 == 0x0D }) {
                let line = String(decoding: buffer[..<newline], as: UTF8.self)
                buffer.removeSubrange(...newline)
                return line
            }
            if atEnd {
                guard !buffer.isEmpty else { return nil }
                defer { buffer.removeAll() }
                return String(decoding: buffer, as: UTF8.self)
            }
            var chunk = [UInt8](repeating: 0, count: 64 << 10)
            let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { atEnd = true } else { buffer += chunk[..<n] }
        }
    }
}
