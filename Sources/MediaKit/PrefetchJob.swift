import Foundation
import MediaSource
import RangeFetch

/// A whole prefetch as the CLI and the service run it: plan from the index, fetch what is
/// missing, make sure it was kept, and report the buffered time ranges. Runs on one version of
/// the resource (`MediaSession.onOneVersion`): nothing is emitted before it returns.
public struct PrefetchJob: Sendable {
    public var planner = PrefetchPlanner()
    public var prefetcher = Prefetcher()
    /// Plan only: the header is read to make the plan, nothing more is fetched.
    public var planOnly = false

    public init() {}

    /// `progress` gets the bytes fetched so far and the bytes the plan misses, about ten times a second.
    public func run(_ input: String, session: MediaSession, start: Double, seconds: Double,
                    tracks: TrackSelection = .defaults,
                    progress: @escaping @Sendable (_ fetched: Int64, _ total: Int64) -> Void = { _, _ in }) throws -> PrefetchResult {
        try session.onOneVersion {
            let started = Date()
            let (plan, context, source) = try planner.plan(input, session: session, start: start, seconds: seconds, tracks: tracks)
            if !planOnly {
                // A prefetch is for later: bytes that are not kept on disk are of no use.
                guard source.keepsBytes else { throw SourceError.notKept(input: source.input, reason: source.whyNotKept) }
                let base = source.counters.bytesFetched
                let ticker = DispatchSource.makeTimerSource(queue: .global())
                ticker.schedule(deadline: .now(), repeating: 0.1)
                ticker.setEventHandler { progress(source.counters.bytesFetched - base, plan.missingBytes) }
                ticker.resume()
                defer { ticker.cancel() }
                try prefetcher.fetch(plan, source: source, cancellation: session.cancellation)
                let all = plan.headerRanges + plan.sampleRanges
                if let gap = all.lazy.flatMap({ source.missingRanges(in: $0) }).first {
                    throw SourceError.notKept(input: source.input, reason:
                        "bytes \(gap.lowerBound)-\(gap.upperBound - 1) are still missing after the prefetch")
                }
            }
            if source.versionChanged { throw SourceError.versionChanged(input: source.input) }
            return PrefetchResult(plan: plan, fetched: source.counters, seconds: Date().timeIntervalSince(started),
                                  buffered: context.bufferedRanges(source: source, streams: plan.tracks.map(\.index)))
        }
    }
}
