import Dispatch
import Synchronization

/// At most `size` connections to one PostgreSQL, shared by a service's threads. A connection the
/// server dropped (a restart, a network cut) is replaced: a statement that fails on one is tried
/// once more on a new connection, so a restart of PostgreSQL costs the callers a reconnect, not
/// an error.
final class PostgresPool: Sendable {
    let url: String
    private let idle = Mutex<[Held]>([])
    private let slots: DispatchSemaphore

    /// A connection between users: the pool hands it to one thread at a time.
    private struct Held: @unchecked Sendable {
        let connection: PostgresConnection
    }

    init(url: String, size: Int) {
        self.url = url
        slots = DispatchSemaphore(value: size)
    }

    /// Runs `body` on a connection of the pool; waits at most 30 s for one to be free.
    func with<R>(_ body: (PostgresConnection) throws -> R) throws -> R {
        guard slots.wait(timeout: .now() + 30) == .success else {
            throw PostgresError(message: "PostgreSQL: every connection of the pool stayed busy for 30 s", state: nil)
        }
        defer { slots.signal() }
        var reused = idle.withLock { $0.popLast()?.connection }
        while true {
            let connection = try reused ?? PostgresConnection(url: url)
            do {
                let result = try body(connection)
                idle.withLock { $0.append(Held(connection: connection)) }
                return result
            } catch let error as PostgresError {
                // A connection that failed is dropped. One that had been idle may have been cut
                // while it waited: then the statement never ran, and runs once more on a new one.
                if connection.isOpen { idle.withLock { $0.append(Held(connection: connection)) } }
                guard reused != nil, !connection.isOpen else { throw error }
                reused = nil
            }
        }
    }

    /// Closes the idle connections (those in use close when their users are done with them).
    func close() { idle.withLock { $0.removeAll() } }
}
