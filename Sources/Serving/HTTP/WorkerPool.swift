import Foundation

/// Threads for work that may wait (a handler waiting on an origin or the job store, a body
/// waiting for bytes being fetched), so that the server's event loops never do: a thread is made
/// when work comes and none is idle, up to `limit`, and ends after `idleSeconds` without work.
/// Past the limit, work waits its turn in order. Idle connections hold no thread.
final class WorkerPool: @unchecked Sendable {  // every var below is guarded by `lock`
    private let limit: Int
    private let idleSeconds: Double
    private let lock = NSCondition()
    private var queue: [@Sendable () -> Void] = []
    private var threads = 0
    /// Threads waiting for work and not yet claimed by a `run`.
    private var idle = 0
    /// Wake-ups `run` owes idle threads it claimed: each takes one job (or finds it taken).
    private var claims = 0
    private var stopped = false

    init(limit: Int, idleSeconds: Double = 10) {
        self.limit = max(1, limit)
        self.idleSeconds = idleSeconds
    }

    /// Runs `work` on a pool thread, soon. After `stop()`, it runs on a thread of its own: work
    /// handed over must end, or a connection would stay set aside forever.
    func run(_ work: @escaping @Sendable () -> Void) {
        lock.lock()
        queue.append(work)
        var spawn = false
        if idle > 0 && !stopped {
            idle -= 1
            claims += 1
            lock.signal()
        } else if threads < limit || stopped {
            threads += 1
            spawn = true
        }
        lock.unlock()
        if spawn {
            let thread = Thread { [self] in
                while let work = next() { work() }
            }
            thread.name = "mprobe.http.worker"
            thread.start()
        }
    }

    /// Lets idle threads end now; running work goes on.
    func stop() {
        lock.lock()
        stopped = true
        lock.broadcast()
        lock.unlock()
    }

    /// The next job, waiting up to `idleSeconds` for one; nil when the thread should end.
    private func next() -> (@Sendable () -> Void)? {
        lock.lock()
        defer { lock.unlock() }
        while true {
            if !queue.isEmpty { return queue.removeFirst() }
            if stopped {
                threads -= 1
                return nil
            }
            idle += 1
            let deadline = Date().addingTimeInterval(idleSeconds)
            while claims == 0 && !stopped {
                if !lock.wait(until: deadline) && claims == 0 { break }
            }
            if claims > 0 {
                claims -= 1  // `run` took this thread off the idle count
            } else {
                idle -= 1
                if !stopped {
                    threads -= 1
                    return nil
                }
            }
        }
    }
}
