import CMicroHTTPD
import Synchronization

/// Connections set aside (`MHD_suspend_connection`) while a worker thread answers them or waits
/// for their body's next bytes: the event loop leaves them alone meanwhile, and no thread is held
/// for them there.
///
/// Each is taken back (`MHD_resume_connection`) exactly once: by the worker when it is done, or
/// at shutdown, since libmicrohttpd must not be stopped while any is set aside. Taking back under
/// the lock that `setAside` also takes means neither happens twice, nor after the daemon is gone.
final class SetAside: Sendable {
    private struct Parked {
        let connection: OpaquePointer
        /// What the connection gets when the server stops before its worker is done.
        let onStop: @Sendable () -> Void
    }
    private struct State: @unchecked Sendable {  // the pointers are only used under the lock
        var parked: [UInt: Parked] = [:]
        var stopping = false
    }
    private let state = Mutex(State())

    /// Suspends `connection`, to be taken back by `takeBack`; false (and nothing done) once the
    /// server is stopping. Called from the event loop's callbacks only, as libmicrohttpd asks.
    func setAside(_ connection: OpaquePointer, onStop: @escaping @Sendable () -> Void) -> Bool {
        state.withLock { s in
            guard !s.stopping else { return false }
            MHD_suspend_connection(connection)
            s.parked[UInt(bitPattern: connection)] = Parked(connection: connection, onStop: onStop)
            return true
        }
    }

    /// Resumes `connection` if it is still set aside (not taken back at shutdown already).
    func takeBack(_ connection: OpaquePointer) {
        state.withLock { s in
            guard s.parked.removeValue(forKey: UInt(bitPattern: connection)) != nil else { return }
            MHD_resume_connection(connection)
        }
    }

    /// Refuses new suspensions and resumes every connection set aside, each told first.
    func takeBackAll() {
        state.withLock { s in
            s.stopping = true
            for parked in s.parked.values {
                parked.onStop()
                MHD_resume_connection(parked.connection)
            }
            s.parked = [:]
        }
    }
}
