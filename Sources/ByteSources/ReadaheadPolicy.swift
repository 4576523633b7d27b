/// How much to fetch on a miss. A demuxer reads ~32 KB at a time; one request per read is the
/// classic failure, so sequential reads double the window up to `maximum`, and a seek starts
/// again at `initial`. A read a little ahead of the last one (within `forwardSkip`) still counts
/// as sequential, so skipping a small box does not reset the window.
public struct ReadaheadPolicy: Sendable, Equatable {
    public var initial: Int64 = 256 << 10
    public var maximum: Int64 = 16 << 20
    public var forwardSkip: Int64 = 256 << 10

    public init() {}

    public init(initial: Int64, maximum: Int64, forwardSkip: Int64) {
        self.initial = initial
        self.maximum = maximum
        self.forwardSkip = forwardSkip
    }
}

/// The policy's state for one reader: where the last read ended and the current window.
struct ReadaheadState {
    let policy: ReadaheadPolicy
    private(set) var lastEnd: Int64 = -1
    private(set) var window: Int64

    init(policy: ReadaheadPolicy) {
        self.policy = policy
        window = policy.initial
    }

    /// The window to fetch for a miss at `offset`.
    mutating func windowForMiss(at offset: Int64) -> Int64 {
        let sequential = lastEnd >= 0 && offset >= lastEnd && offset - lastEnd <= policy.forwardSkip
        window = sequential ? min(window * 2, policy.maximum) : policy.initial
        return window
    }

    /// The miss's window was cut to `size` (a reader's limit): the next doubles from that.
    mutating func clamp(to size: Int64) {
        window = max(1, min(window, size))
    }

    mutating func didRead(at offset: Int64, count: Int) {
        lastEnd = offset + Int64(count)
    }
}
