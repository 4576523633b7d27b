import Foundation

/// State behind a lock that waits mostly asleep: for state that many threads contend for at once
/// (one cache entry read by fifty proxied responses). `Synchronization.Mutex` spins before it
/// sleeps, and on a two-core machine the spinning burns the time the holder needs. This is a
/// pthread mutex of glibc's adaptive kind: a waiter spins a few dozen rounds (about as long as the
/// short sections here last, learned from the last waits), then sleeps. A default pthread mutex
/// (`NSLock`) put every waiter to sleep at once: the two event loops, which take the same
/// resource's locks on every request of a popular URL, then slept and woke hundreds of times a
/// second. Same shape as `Mutex.withLock`.
public final class BlockingLock<Value>: @unchecked Sendable {
    // Guarded by `mutex`.
    private var value: Value
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)

    public init(_ value: Value) {
        self.value = value
        var attributes = pthread_mutexattr_t()
        pthread_mutexattr_init(&attributes)
        pthread_mutexattr_settype(&attributes, Int32(PTHREAD_MUTEX_ADAPTIVE_NP))
        pthread_mutex_init(mutex, &attributes)
        pthread_mutexattr_destroy(&attributes)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    public func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value)
    }
}
