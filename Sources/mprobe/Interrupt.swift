import Foundation
import RangeFetch
import Support

/// Ctrl-C cancels the running job (fetches stop, libavformat gets AVERROR_EXIT) so it ends with
/// a clear message and exit 130; a second Ctrl-C exits at once.
enum Interrupt {
    static let cancellation: Cancellation = {
        let cancellation = Cancellation()
        signal(SIGINT, SIG_IGN)
        let source = DispatchSource.makeSignalSource(signal: SIGINT, queue: .global())
        source.setEventHandler {
            if cancellation.isCancelled { exit(ExitCode.cancelled.rawValue) }
            cancellation.cancel()
        }
        source.resume()
        signalSources.append(source)
        return cancellation
    }()

    /// Keeps the dispatch source alive for the life of the process.
    nonisolated(unsafe) private static var signalSources: [DispatchSourceSignal] = []
}
