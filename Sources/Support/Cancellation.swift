import Synchronization

/// A flag that long operations poll to stop early: set it from any thread.
public final class Cancellation: Sendable {
    private let flag = Atomic<Bool>(false)
    /// Polled too: a cancellation that follows others (e.g. "everyone who needs this fetch left").
    private let condition: (@Sendable () -> Bool)?

    public init() { condition = nil }

    /// Cancelled by `cancel()`, or as soon as `condition` returns true (it is polled, so keep it cheap).
    public init(when condition: @escaping @Sendable () -> Bool) { self.condition = condition }

    public func cancel() { flag.store(true, ordering: .relaxed) }
    public var isCancelled: Bool { flag.load(ordering: .relaxed) || condition?() == true }
}
