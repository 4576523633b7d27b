import Foundation

/// State behind a lock that blocks instead of spinning: for state that many threads contend for at
/// once (one cache entry read by fifty proxied responses). `Synchronization.Mutex` spins before it
/// sleeps, and on a two-core machine the spinning burns the time the holder needs; a pthread
/// mutex (through `NSLock`) puts waiters to sleep at once. Same shape as `Mutex.withLock`.
public final class BlockingLock<Value>: @unchecked Sendable {
    // Guarded by `lock`.
    private var value: Value
    private let lock = NSLock()

    public init(_ value: Value) { self.value = value }

    public func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}
