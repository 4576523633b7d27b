import Foundation

/// Polls `holds` every millisecond until it is true (true), or `seconds` pass (false): for a state
/// that no notification announces (another thread's progress, a server's record of a request).
public func waitUntil(seconds: Double = 10, _ holds: () -> Bool) -> Bool {
    let deadline = Date().addingTimeInterval(seconds)
    while !holds() {
        guard Date() < deadline else { return false }
        usleep(1_000)
    }
    return true
}
