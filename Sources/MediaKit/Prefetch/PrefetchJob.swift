import ByteSources
import Containers
import Foundation
import RangeFetch

/// What a prefetch did: of a media file, or of an HLS stream.
public enum PrefetchOutcome: Sendable {
    case file(PrefetchResult)
    case stream(StreamPrefetchResult)
}

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
    public func run(
        _ input: String, session: MediaSession, start: Double, seconds: Double,
        tracks: TrackSelection = .defaults,
        progress: @escaping @Sendable (_ fetched: Int64, _ total: Int64) -> Void = { _, _ in }
    ) throws -> PrefetchResult {
        try session.onOneVersion {
            try run(
                try PrefetchPlanner.open(session.open(input), session: session).media(), session: session, start: start,
                seconds: seconds, tracks: tracks, progress: progress)
        }
    }

    /// A media file's prefetch, or, for an HLS playlist, `stream`'s (of the variant it picks; the
    /// window's segments, with `planOnly` and the connections of this job).
    public func run(
        _ input: String, session: MediaSession, start: Double, seconds: Double, tracks: TrackSelection = .defaults,
        stream: StreamPrefetchJob,
        progress: @escaping @Sendable (_ fetched: Int64, _ total: Int64) -> Void = { _, _ in }
    ) throws -> PrefetchOutcome {
        try session.onOneVersion {
            let source = try session.open(input)
            switch try PrefetchPlanner.open(source, session: session) {
            case .media(let opened):
                return .file(
                    try run(
                        opened, session: session, start: start, seconds: seconds, tracks: tracks, progress: progress))
            case .stream:
                var job = stream
                (job.planOnly, job.connections, job.players) = (planOnly, prefetcher.connections, planner.players)
                return .stream(
                    try job.run(
                        input, session: session, start: start, seconds: seconds, opened: source, progress: progress))
            }
        }
    }

    private func run(
        _ opened: OpenedInput, session: MediaSession, start: Double, seconds: Double, tracks: TrackSelection,
        progress: @escaping @Sendable (_ fetched: Int64, _ total: Int64) -> Void
    ) throws -> PrefetchResult {
        let started = Date()
        let (plan, context, source) = try planner.plan(
            opened, session: session, start: start, seconds: seconds, tracks: tracks)
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
            if plan.walksAudioFrames, let stream = plan.tracks.first?.index {
                let windowStart = context.startTime + start
                try MPEGAudioFrames.fetchWindow(
                    of: stream, in: context, from: windowStart, to: windowStart + seconds, source: source,
                    cancellation: session.cancellation)
            }
            // Then read as check will read it: what the plan missed is fetched now, not found
            // missing offline (a second audio track's run, a key frame before the fragment an mfra
            // lists, an estimate's start).
            try PrefetchPlanner.readAsAPlayer(
                context: Checker.open(source, session: session).media().context,
                streams: plan.tracks.map(\.index), start: start, seconds: seconds,
                cancellation: session.cancellation)
            let all = plan.allRanges
            if let gap = all.lazy.flatMap({ source.missingRanges(in: $0) }).first {
                throw SourceError.notKept(
                    input: source.input,
                    reason:
                        "bytes \(gap.lowerBound)-\(gap.upperBound - 1) are still missing after the prefetch")
            }
            // The cache may have refused them on the way (a full disk): fetched, but not kept.
            guard source.keepsBytes else { throw SourceError.notKept(input: source.input, reason: source.whyNotKept) }
            // Bytes a readahead transfer still running stored (the plan found them here) are
            // recorded only when it ends; the process may end first.
            try source.makeDurable()
            // The ticker may not have run since the last bytes came (or at all, for a quick job).
            progress(source.counters.bytesFetched - base, plan.missingBytes)
        }
        if source.versionChanged { throw SourceError.versionChanged(input: source.input) }
        return PrefetchResult(
            plan: plan, fetched: source.counters, seconds: Date().timeIntervalSince(started),
            buffered: opened.seekIndex.buffered(streams: plan.tracks.map(\.index)))
    }
}
