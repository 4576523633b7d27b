import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// A connection of its own that `LISTEN`s on channels and hands each notification to `handler`,
/// on a thread of its own. It reconnects when PostgreSQL goes away (trying again within 2 s) and
/// then calls `handler` with an empty channel, since notices sent meanwhile were lost: whoever
/// listens looks again.
final class JobListener: Sendable {
    private let stopping = Atomic<Bool>(false)
    private let ended = DispatchSemaphore(value: 0)

    init(url: String, channels: [String], handler: @escaping @Sendable (_ channel: String, _ payload: String) -> Void) {
        let thread = Thread { [self] in listen(url: url, channels: channels, handler: handler) }
        thread.name = "mprobe.jobs.listen"
        thread.start()
    }

    private func listen(url: String, channels: [String], handler: (_ channel: String, _ payload: String) -> Void) {
        defer { ended.signal() }
        var pause = 0.1
        while !stopping.load(ordering: .acquiring) {
            do {
                let connection = try PostgresConnection(url: url)
                try connection.execute(channels.map { "LISTEN \($0);" }.joined())
                pause = 0.1
                handler("", "")
                while !stopping.load(ordering: .acquiring) {
                    var entry = pollfd(fd: connection.socket, events: Int16(POLLIN), revents: 0)
                    let ready = poll(&entry, 1, 250)
                    guard ready != 0 else { continue }
                    guard ready > 0 || errno == EINTR else { break }
                    for note in try connection.notifications() { handler(note.channel, note.payload) }
                }
            } catch {
                // Unreachable or cut: look again soon, then less often, never less than every 2 s.
                let until = Date().addingTimeInterval(pause)
                while Date() < until && !stopping.load(ordering: .acquiring) { Thread.sleep(forTimeInterval: 0.05) }
                pause = min(2, pause * 2)
            }
        }
    }

    /// Stops listening; returns once the thread has left (within a quarter of a second).
    func stop() {
        guard !stopping.exchange(true, ordering: .acquiringAndReleasing) else { return }
        ended.wait()
    }
}
