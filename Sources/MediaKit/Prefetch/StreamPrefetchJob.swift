import ByteSources
import Containers
import Foundation
import RangeFetch
import Synchronization

/// What a prefetch of an HLS stream planned and did, per media playlist it reads.
public struct StreamPrefetchResult: Sendable {
    public struct Window: Sendable {
        public let role: String
        public let playlist: String
        /// The variant's, for a variant's playlist of a master playlist.
        public let bandwidth: Int?
        /// Where the window's first segment starts and its last ends, in the playlist's time.
        public let first: Double
        public let end: Double
        /// The segments planned: the window's, on the played variant, and what players read besides.
        public let segments: Int
        /// The initialization sections and segments, each once.
        public let parts: [Part]
        /// The stretches of the playlist whose segments are all cached, after the job.
        public let buffered: [Range<Double>]
    }

    public struct Part: Sendable {
        public let uri: String
        /// Nil: all of it.
        public let range: Range<Int64>?
        /// "window", "before the window", "opening", "starting" (of the window, on the variant a
        /// player starts on), "first segment" or "initialization".
        public let why: String
        /// The players (`PlayerProfile.name`) that read it.
        public let players: [String]
    }

    public let input: String
    /// "hls" or "dash".
    public let format: String
    public let start: Double
    public let seconds: Double
    public let bandwidth: Int?
    public let width: Int?
    public let height: Int?
    public let windows: [Window]
    public let fetched: SourceCounters
    public let elapsed: Double
    public let planOnly: Bool
}

/// `mprobe prefetch` of an HLS or DASH stream: the playlists, then the initialization sections
/// and the segments that cover [start, start + seconds) of the chosen variant and of the audio
/// rendition it plays with, and those `players` read besides (`StreamPlan`), in parallel, each
/// segment (or byte range) one request.
public struct StreamPrefetchJob: Sendable {
    public var pick = VariantPick.best
    public var connections = 4
    public var planOnly = false
    /// Also the first segment of the played variant's playlists, whoever the plan is for.
    public var firstSegment = false
    /// The players the plan is for (`PlayerProfile.stream`): every known one by default.
    /// `PrefetchJob.run` sets them from its planner's, so a file and a stream plan for the same.
    public var players = PlayerProfile.known

    public init() {}

    /// `opened`: a source of `input` the caller has read already (what it cost counts here).
    /// `progress` gets the parts stored so far and the parts planned.
    public func run(
        _ input: String, session: MediaSession, start: Double, seconds: Double, opened: (any MediaSource)? = nil,
        progress: @escaping @Sendable (_ done: Int64, _ total: Int64) -> Void = { _, _ in }
    ) throws -> StreamPrefetchResult {
        let started = Date()
        var playlists = StreamPlaylists(session: session, opened: opened)
        let selection = try StreamSelection.select(input, pick: pick, playlists: &playlists)
        try selection.checkWindow(input, start: start)
        let plan = try StreamPlan(
            selection, players: players, start: start, seconds: seconds, firstSegment: firstSegment,
            loader: &playlists)
        for p in plan.playlists where StreamPlan.segments(p).contains(where: { $0.encrypted }) {
            throw MediaError.unsupportedStream(
                input: input,
                detail: "its segments are encrypted (\(p.media.encryption.sorted().joined(separator: ", "))): "
                    + "mprobe does not fetch keys, so a kept window could not be played")
        }
        // A part two playlists share (a DASH initialization section, a rendition's) is fetched once.
        var seen = Set<String>()
        let unique = plan.playlists.flatMap(StreamPlan.parts).filter {
            seen.insert($0.uri + ($0.range.map { "#\($0.lowerBound)-\($0.upperBound)" } ?? "")).inserted
        }
        if !planOnly {
            let sources = try unique.map { part in (part, try session.open(part.uri)) }
            for (_, source) in sources where !source.keepsBytes {
                throw SourceError.notKept(input: source.input, reason: source.whyNotKept)
            }
            let pieces = sources.map {
                Prefetcher.Piece(source: $0.1, range: $0.0.range ?? 0..<StreamPlaylists.wholePartLimit)
            }
            let total = Int64(pieces.count)
            let done = ManagedCounter()
            var prefetcher = Prefetcher()
            prefetcher.connections = connections
            try prefetcher.fetch(pieces, cancellation: session.cancellation) {
                done.add(1); progress(done.value, total)
            }
            for (part, source) in sources {
                // A range past the end of its file is the playlist's fault, said as such.
                let range = try SpanSource.bytes(of: source, range: part.range)
                if !source.isLocal(range) {
                    throw SourceError.notKept(
                        input: session.shown(part.uri), reason: "bytes are still missing after the prefetch")
                }
                // The cache may have refused them on the way (a full disk): fetched, but not kept.
                guard source.keepsBytes else {
                    throw SourceError.notKept(input: session.shown(part.uri), reason: source.whyNotKept)
                }
                try StreamPlaylists.checkIsMedia(source, range: part.range)
                try source.makeDurable()
            }
            playlists.add(sources.map(\.1))
        }
        let windows = try plan.playlists.map { p in
            let window = p.media.segments[p.window]
            // URLs as shown: a playlist's segments may carry its signatures.
            return StreamPrefetchResult.Window(
                role: p.role, playlist: session.shown(p.uri), bandwidth: p.bandwidth, first: window.first?.start ?? 0,
                end: window.last.map { $0.start + $0.duration } ?? 0, segments: p.reads.count,
                parts: StreamPlan.parts(p).map {
                    .init(uri: session.shown($0.uri), range: $0.range, why: $0.why, players: $0.players)
                },
                buffered: try StreamPrefetchJob.buffered(p.media, session: session))
        }
        return StreamPrefetchResult(
            input: session.shown(input), format: playlists.format, start: start, seconds: seconds,
            bandwidth: selection.variant?.bandwidth,
            width: selection.variant?.width, height: selection.variant?.height, windows: windows,
            fetched: playlists.counters, elapsed: Date().timeIntervalSince(started), planOnly: planOnly)
    }

    /// Every byte of the part is here: its range, or (no range) the whole resource, whose size is known.
    static func isWhole(_ range: Range<Int64>?, in source: any MediaSource) -> Bool {
        if let range { return source.isLocal(range) }
        if let remote = source as? RemoteSource {
            guard let size = remote.knownSize else { return false }
            return source.isLocal(0..<size)
        }
        return true
    }

    /// The stretches of `media` whose segments (and their initialization sections) are all cached.
    static func buffered(_ media: HLSMedia, session: MediaSession) throws -> [Range<Double>] {
        var spans: [Range<Double>] = []
        var known: [String: Bool] = [:]
        func cached(_ uri: String, _ range: Range<Int64>?) throws -> Bool {
            let key = uri + (range.map { "#\($0.lowerBound)-\($0.upperBound)" } ?? "")
            if let answer = known[key] { return answer }
            let answer = isWhole(range, in: try session.open(uri))
            known[key] = answer
            return answer
        }
        for s in media.segments {
            let here =
                try cached(s.uri, s.byteRange) && (try s.initSection.map { try cached($0.uri, $0.byteRange) } ?? true)
            guard here else { continue }
            let span = s.start..<s.start + s.duration
            if let last = spans.last, abs(last.upperBound - span.lowerBound) < 0.001 {
                spans[spans.count - 1] = last.lowerBound..<span.upperBound
            } else {
                spans.append(span)
            }
        }
        return spans
    }
}

/// A count shared by the prefetch workers.
private final class ManagedCounter: Sendable {
    private let count = Atomic<Int64>(0)
    func add(_ n: Int64) { _ = count.wrappingAdd(n, ordering: .relaxed) }
    var value: Int64 { count.load(ordering: .relaxed) }
}

/// What of a stream is cached: per variant and rendition whose playlist is, the stretches whose
/// segments all are (`mprobe cache ranges` of a playlist or manifest).
public struct StreamBuffer: Sendable {
    public let uri: String
    /// "variant" or "rendition".
    public let role: String
    public let bandwidth: Int?
    public let duration: Double
    public let buffered: [Range<Double>]

    /// Nil when `input` is not a playlist or manifest the cache holds; `session` should be offline.
    public static func cached(_ input: String, session: MediaSession) -> [StreamBuffer]? {
        var playlists = StreamPlaylists(session: session)
        guard let top = try? playlists.load(input) else { return nil }
        func buffer(_ uri: String, role: String, bandwidth: Int?, media: HLSMedia) -> StreamBuffer? {
            guard let spans = try? StreamPrefetchJob.buffered(media, session: session) else { return nil }
            return StreamBuffer(uri: uri, role: role, bandwidth: bandwidth, duration: media.duration, buffered: spans)
        }
        switch top {
        case .media(let media):
            return [buffer(input, role: "variant", bandwidth: nil, media: media)].compactMap { $0 }
        case .master(let master):
            var out: [StreamBuffer] = []
            for v in master.variants {
                if let media = try? playlists.loadMedia(v.uri),
                    let b = buffer(v.uri, role: "variant", bandwidth: v.bandwidth, media: media)
                {
                    out.append(b)
                }
            }
            for r in master.renditions {
                if let uri = r.uri, let media = try? playlists.loadMedia(uri),
                    let b = buffer(uri, role: "rendition", bandwidth: nil, media: media)
                {
                    out.append(b)
                }
            }
            return out
        }
    }
}
