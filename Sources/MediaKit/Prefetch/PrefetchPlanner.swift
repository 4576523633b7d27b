import ByteSources
import Caching
import Containers
import FFmpeg
import Foundation
import RangeFetch
import Support

/// Turns a time window into byte ranges from the container's seek index (`SeekIndex`).
///
/// Opening the file (as `probe` and `check` do, with `avformat_find_stream_info`) fetches and caches
/// the header; the bytes libavformat read for that, and for placing the window, become the plan's
/// header ranges. The seek index gives the window's bytes: each sample where it sizes them (from
/// the video key frame at or before the start), the stretch between seek points where it gives
/// positions only, or an estimate from the bit rate. Times are presentation times (see
/// `IndexEntry.time`), offset by the container's start time.
public struct PrefetchPlanner: Sendable {
    /// Sample ranges closer than this are fetched as one range: one request for a few
    /// kilobytes of another track's interleaved samples is cheaper than a round trip.
    public static let mergeGap: Int64 = 64 << 10
    /// The players the plan is for: what each reads besides libavformat's reading is added
    /// (`PlayerProfile`). Every known player unless told otherwise.
    public var players = PlayerProfile.known

    public init() {}

    public func plan(
        _ input: String, session: MediaSession, start: Double, seconds: Double,
        tracks selection: TrackSelection = .defaults
    ) throws -> (PrefetchPlan, FormatContext, any MediaSource) {
        try plan(
            try PrefetchPlanner.open(session.open(input), session: session).media(), session: session, start: start,
            seconds: seconds,
            tracks: selection)
    }

    /// How a plan opens its input.
    static func open(_ source: any MediaSource, session: MediaSession) throws -> Opened {
        try OpenedInput.open(
            source: source, session: session, findStreamInfo: true, fragments: .throughIndex(oneStream: false))
    }

    func plan(
        _ opened: OpenedInput, session: MediaSession, start: Double, seconds: Double,
        tracks selection: TrackSelection
    ) throws -> (PrefetchPlan, FormatContext, any MediaSource) {
        let (source, context) = (opened.source, opened.context)
        try PrefetchPlanner.refuseAWindowPastTheEnd(opened, start: start)
        let streams = try selection.streams(in: context)
        // Seeking puts every other stream at the video key frame's decode time, so their samples are
        // needed from there (a player drops them, but the demuxer reads them).
        let ordered = streams.sorted {
            (context.kind(ofStream: $0) == .video ? 0 : 1) < (context.kind(ofStream: $1) == .video ? 0 : 1)
        }
        let query = WindowQuery(
            streams: ordered, start: start, seconds: seconds, containerStart: context.startTime,
            cancellation: session.cancellation)
        var sampleSet = ByteRangeSet()
        var planned: [PrefetchPlan.Track]
        var note: String?
        var (estimated, walksFrames) = (false, false)
        // Everything libavformat read, placing the window included (Cues, moofs it indexed on the
        // way): an offline open and seek reads it again.
        let header: ByteRangeSet
        switch try opened.seekIndex.window(query) {
        case .samples(let samples, let tracks):
            (sampleSet, planned) = (samples, tracks)
            header = context.bytesRead
        case .points(let window):
            sampleSet.insert(window.range)
            (note, walksFrames) = (window.why, window.walksFrames)
            header = context.bytesRead  // before the window's packets are read to count them
            // Whole stretches between index points: their times are known, their samples counted
            // only where the bytes are here to read.
            planned =
                try PrefetchPlanner.count(
                    clusters: window, context: context, streams: streams, source: source,
                    cancellation: session.cancellation)
                ?? streams.map {
                    PrefetchPlan.Track(
                        index: $0, kind: context.kind(ofStream: $0), samples: nil, bytes: nil,
                        firstTime: window.first, lastTime: window.last)
                }
        case .estimated(let range, let why):
            sampleSet.insert(range)
            (note, estimated) = (why, true)
            header = context.bytesRead
            planned = streams.map {
                PrefetchPlan.Track(
                    index: $0, kind: context.kind(ofStream: $0), samples: nil, bytes: nil, firstTime: nil,
                    lastTime: nil)
            }
        }
        let sampleRanges = Prefetcher.merge(sampleSet.ranges, gap: PrefetchPlanner.mergeGap)
        var floor = sampleSet
        floor.formUnion(header)  // the first request already holds the first samples: count them once
        var all = ByteRangeSet(sampleRanges)
        all.formUnion(header)
        let extra = try playerRanges(opened, reads: all)
        for part in extra {
            all.insert(part.range)
            floor.insert(part.range)
        }
        let missing = all.ranges.flatMap { source.missingRanges(in: $0) }
        var plan = PrefetchPlan(
            input: source.input, start: start, seconds: seconds, tracks: planned,
            headerRanges: header.ranges, sampleRanges: sampleRanges, missing: missing,
            estimated: estimated, note: note,
            floorBytes: floor.byteCount)
        plan.playerRanges = extra
        plan.walksAudioFrames = walksFrames
        return (plan, context, source)
    }

    /// What the players read that libavformat's plan (`reads`) leaves out: the head of the file,
    /// for players that read it before they seek, and the bytes back to a block boundary before
    /// each range, for players that read in blocks.
    private func playerRanges(
        _ opened: OpenedInput, reads: ByteRangeSet
    ) throws -> [PrefetchPlan.PlayerRange] {
        var parts: [PrefetchPlan.PlayerRange] = []
        var covered = reads
        let readers = players.filter { $0.readsFromStart > 0 }
        if let head = readers.map(\.readsFromStart).max(), let size = try opened.source.size() {
            let why = "the first \(head >> 20) MiB, which it reads before it seeks"
            for range in ByteRangeSet([0..<min(size, head)]).subtracting(covered.ranges).ranges {
                parts.append(PrefetchPlan.PlayerRange(range: range, players: readers.map(\.name), why: why))
                covered.insert(range)
            }
        }
        let blockers = players.filter { $0.alignment > 1 }
        if let block = blockers.map(\.alignment).max() {
            var before = ByteRangeSet()
            for range in covered.ranges where range.lowerBound % block != 0 {
                before.insert(range.lowerBound / block * block..<range.lowerBound)
            }
            for range in before.subtracting(covered.ranges).ranges {
                parts.append(
                    PrefetchPlan.PlayerRange(
                        range: range, players: blockers.map(\.name),
                        why:
                            "the start of the \(block >> 10) KiB block its read of byte \(range.upperBound) begins with"
                    ))
            }
        }
        return parts.sorted { $0.range.lowerBound < $1.range.lowerBound }
    }

    /// A window that starts at or past the end of the file has nothing to prefetch or play: said
    /// so (a check said "plays" with no frame, a prefetch fetched the last fragment), when the
    /// file states its duration.
    static func refuseAWindowPastTheEnd(_ opened: OpenedInput, start: Double) throws {
        guard let duration = opened.seekIndex.statedDuration,
            duration > 0, start >= duration
        else { return }
        throw MediaError.noTimeline(
            input: opened.source.input,
            detail: String(
                format: "the window starts at %.3f s, at or past the end (%.3f s)",
                start, duration))
    }

    /// Reads the window as a player (and `check`) reads it — its seek, then every packet to the
    /// window's end — through the cache: whatever a plan missed is fetched here, such as an
    /// MPEG-TS seek's probes across the file (a bisection over timestamps), packets before an
    /// estimate's start, or the next fragment when the sample after a track's window lies there
    /// after all. A plan from the sample index misses nothing, and this reads only cached bytes.
    static func readAsAPlayer(
        context: FormatContext, streams: [Int], start: Double, seconds: Double,
        cancellation: Cancellation
    ) throws {
        let windowStart = context.startTime + start
        if start > 0 { try context.seek(seconds: windowStart) }
        var open = Set(streams)
        let end = WindowEnd(windowStart + seconds, streams: streams, in: context)
        let packet = try Packet()
        while !open.isEmpty, try context.readPacket(into: packet) {
            if cancellation.isCancelled { throw MediaError.interrupted }
            if end.reached(by: packet, in: context) { open.remove(packet.streamIndex) }
        }
    }

    /// The samples and bytes per track of a window placed by positions, counted by reading its
    /// packets: those that start between the window's first point and the next. Only where every
    /// byte from the window to the end of the file is here (a file, or a whole cached copy), since
    /// the demuxer reads into what follows to find where the window ends: a plan fetches nothing
    /// but the index. Nil otherwise.
    private static func count(
        clusters window: PointWindow, context: FormatContext, streams: [Int], source: any MediaSource,
        cancellation: Cancellation
    ) throws -> [PrefetchPlan.Track]? {
        guard let size = try source.size(), source.isLocal(window.range.lowerBound..<size) else { return nil }
        try context.seek(seconds: context.startTime + window.first)
        var counts = Dictionary(
            uniqueKeysWithValues: streams.map {
                ($0, (samples: 0, bytes: Int64(0), first: Double?.none, last: Double?.none))
            })
        let packet = try Packet()
        while try context.readPacket(into: packet) {
            if cancellation.isCancelled { throw MediaError.interrupted }
            let position = packet.position ?? window.range.lowerBound
            if position >= window.stop { break }
            guard position >= window.range.lowerBound, var c = counts[packet.streamIndex] else { continue }
            c.samples += 1
            c.bytes += packet.size
            if let pts = packet.pts ?? packet.dts {
                let time = context.seconds(pts, stream: packet.streamIndex) - context.startTime
                c.first = min(c.first ?? time, time)
                c.last = max(c.last ?? time, time)
            }
            counts[packet.streamIndex] = c
        }
        return streams.map {
            let c = counts[$0]!
            return PrefetchPlan.Track(
                index: $0, kind: context.kind(ofStream: $0), samples: c.samples, bytes: c.bytes,
                firstTime: c.first, lastTime: c.last)
        }
    }
}
