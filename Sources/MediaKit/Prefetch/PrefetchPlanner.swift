import ByteSources
import Caching
import Containers
import FFmpeg
import Foundation
import RangeFetch
import Support

/// Turns a time window into byte ranges from the demuxer's index.
///
/// Opening the file (as `probe` and `check` do, with `avformat_find_stream_info`) fetches and caches
/// the header; the bytes libavformat read for that become the plan's header ranges. Then, per
/// selected track, the index entries in the window give exact sample ranges: for video every
/// sample from the key frame at or before the start, for other tracks from the sample that
/// contains the start. Times are presentation times (see `IndexEntry.time`), offset by the
/// container's start time.
public struct PrefetchPlanner: Sendable {
    /// Sample ranges closer than this are fetched as one range: one request for a few
    /// kilobytes of another track's interleaved samples is cheaper than a round trip.
    public static let mergeGap: Int64 = 64 << 10
    /// Margin added to a bit-rate estimate, for containers without an index.
    static let estimateMargin = 1.25

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
        let windowStart = context.startTime + start
        let windowEnd = windowStart + seconds

        var sampleSet = ByteRangeSet()
        // The samples the window plays, without the one after it that only tells the demuxer the
        // window has ended.
        var played = ByteRangeSet()
        var planned: [PrefetchPlan.Track] = []
        var indexed = false
        // Seeking puts every other stream at the video key frame's decode time, so their samples are
        // needed from there (a player drops them, but the demuxer reads them).
        let ordered = streams.sorted {
            (context.kind(ofStream: $0) == .video ? 0 : 1) < (context.kind(ofStream: $1) == .video ? 0 : 1)
        }
        var from = windowStart
        var reachTime = -Double.infinity  // the latest decode time of a track's sample after the window
        var indexedEntries: [[IndexEntry]] = []  // each planned track's, read once
        if opened.layout?.fragmented == true, opened.fragmentTimeline == nil {
            try PrefetchPlanner.indexFragments(
                upTo: windowEnd, context: context, streams: ordered,
                cancellation: session.cancellation)
        }
        // A long fragmented MP4 read through its mfra: libavformat's index holds the first fragment.
        for index in ordered where opened.fragmentTimeline == nil {
            let entries = context.indexEntries(stream: index)
            guard !entries.isEmpty else { continue }
            indexedEntries.append(entries)
            indexed = true
            let kind = context.kind(ofStream: index)
            let chosen = PrefetchPlanner.window(entries, from: from, to: windowEnd, fromKeyframe: kind == .video)
            if kind == .video, let keyframe = chosen.first { from = min(from, keyframe.decodeTime) }
            if let last = chosen.last { reachTime = max(reachTime, last.decodeTime) }
            for e in chosen {
                sampleSet.insert(e.byteRange)
                if e.time < windowEnd { played.insert(e.byteRange) }
            }
            planned.append(
                PrefetchPlan.Track(
                    index: index, kind: kind, samples: chosen.count,
                    bytes: chosen.reduce(0) { $0 + $1.size },
                    firstTime: chosen.first.map { $0.time - context.startTime },
                    lastTime: chosen.last.map { $0.time - context.startTime }))
        }
        if indexed {
            sampleSet.formUnion(
                PrefetchPlanner.readOnTheWay(
                    indexedEntries, sampleSet: sampleSet,
                    from: windowEnd, to: reachTime))
        }
        planned.sort { $0.index < $1.index }
        var note: String?
        var estimated = false
        // Everything libavformat read, placing the window included (Cues, moofs it indexed on the
        // way): an offline open and seek reads it again.
        var placedHeader: ByteRangeSet?
        if !indexed {
            // Whether a Matroska file has Cues, from its head: read once, for both placings below.
            let cues = try MatroskaHead(context, source: source)?.cues
            let clusters =
                try PrefetchPlanner.fragmentWindow(
                    opened.fragmentTimeline, context: context, streams: ordered, source: source,
                    from: windowStart, to: windowEnd)
                ?? PrefetchPlanner.pointWindow(
                    context: context, streams: ordered, source: source, cues: cues, from: windowStart,
                    to: windowEnd)
            let (range, why) =
                try clusters.map { ($0.range, $0.why) }
                ?? estimate(context: context, source: source, cues: cues, start: start, seconds: seconds)
            estimated = clusters == nil
            sampleSet.insert(range)
            note = why
            placedHeader = context.bytesRead  // before the window's packets are read to count them
            // Whole stretches between index points: their times are known, their samples counted
            // only where the bytes are here to read.
            planned =
                try clusters.flatMap {
                    try PrefetchPlanner.count(
                        clusters: $0, context: context, streams: streams,
                        source: source, cancellation: session.cancellation)
                }
                ?? streams.map {
                    PrefetchPlan.Track(
                        index: $0, kind: context.kind(ofStream: $0), samples: nil, bytes: nil,
                        firstTime: clusters?.first, lastTime: clusters?.last)
                }
        }
        if indexed, let size = try source.size() {
            sampleSet = try PrefetchPlanner.withinFile(sampleSet, played: played, size: size, input: source.input)
        }
        let header = placedHeader ?? context.bytesRead
        let sampleRanges = Prefetcher.merge(sampleSet.ranges, gap: PrefetchPlanner.mergeGap)
        var floor = sampleSet
        floor.formUnion(header)  // the first request already holds the first samples: count them once
        var all = ByteRangeSet(sampleRanges)
        all.formUnion(header)
        let missing = all.ranges.flatMap { source.missingRanges(in: $0) }
        var plan = PrefetchPlan(
            input: source.input, start: start, seconds: seconds, tracks: planned,
            headerRanges: header.ranges, sampleRanges: sampleRanges, missing: missing,
            estimated: estimated, note: note,
            floorBytes: floor.byteCount)
        plan.walksAudioFrames = context.formatName == "mp3" && !indexed && !estimated
        return (plan, context, source)
    }

    /// A window that starts at or past the end of the file has nothing to prefetch or play: said
    /// so (a check said "plays" with no frame, a prefetch fetched the last fragment), when the
    /// file states its duration.
    static func refuseAWindowPastTheEnd(_ opened: OpenedInput, start: Double) throws {
        guard let duration = opened.fragmentTimeline?.tracks.map(\.seconds).max() ?? opened.context.durationSeconds,
            duration > 0, start >= duration
        else { return }
        throw MediaError.noTimeline(
            input: opened.source.input,
            detail: String(
                format: "the window starts at %.3f s, at or past the end (%.3f s)",
                start, duration))
    }

    /// The entries whose time falls in [from, to), plus the one that contains `from` (for video:
    /// back to the key frame at or before `from`, since decoding starts there; for other tracks one
    /// more before it), plus the first one at or after `to`: a demuxer reads it to learn that the
    /// window has ended.
    static func window(_ entries: [IndexEntry], from: Double, to: Double, fromKeyframe: Bool) -> [IndexEntry] {
        guard var first = entries.lastIndex(where: { $0.time <= from }) ?? (entries.isEmpty ? nil : 0) else {
            return []
        }
        if fromKeyframe {
            first = entries[...first].lastIndex(where: \.isKeyframe) ?? first
        } else {
            // A seek may land one sample earlier (rounding between time bases): take it too.
            first = max(0, first - 1)
        }
        var last = first
        while last + 1 < entries.count && entries[last + 1].time < to { last += 1 }
        if last + 1 < entries.count { last += 1 }
        return Array(entries[first...last])
    }

    /// libavformat's MP4 demuxer takes the next sample by file position among tracks whose next
    /// decode times are within a second of each other, not strictly by time: to reach a track's
    /// first sample past the window (which tells it that track's window ended), it reads the
    /// other tracks' samples that lie before it, though they are past their own window's end. A
    /// fragment holds its video run before its audio run, so the audio sample after a window ending
    /// at a fragment's start sits behind a second of that fragment's video: the check of such a
    /// window read 190 KB the plan had left out. These are the samples of the selected tracks
    /// between the window's first byte and the last one it reaches, decoded from the window's end
    /// to a second after the last sample after it (`reach`).
    private static func readOnTheWay(
        _ tracks: [[IndexEntry]], sampleSet: ByteRangeSet,
        from end: Double, to reach: Double
    ) -> ByteRangeSet {
        guard let first = sampleSet.ranges.first?.lowerBound, let last = sampleSet.ranges.last?.lowerBound else {
            return ByteRangeSet()
        }
        var more = ByteRangeSet()
        for entries in tracks {
            for e in entries
            where e.position > first && e.position < last && e.decodeTime >= end - 1 && e.decodeTime <= reach + 1 {
                more.insert(e.byteRange)
            }
        }
        return more
    }

    /// The sample ranges that lie in a file of `size` bytes. A sample the window plays that lies
    /// past the end means the file is cut short or its index is damaged: that is said as such, the
    /// same for a file and a URL (a URL's prefetch would otherwise fail as bytes it could not keep,
    /// and a file's succeed). The sample after the window may be missing: the demuxer meets the end.
    static func withinFile(
        _ samples: ByteRangeSet, played: ByteRangeSet, size: Int64, input: String
    ) throws -> ByteRangeSet {
        if let past = played.ranges.last, past.upperBound > size {
            throw MediaError.malformed(
                input: input,
                detail: "the window's samples reach byte \(past.upperBound) "
                    + "but the file ends at \(size): it is truncated or its index is damaged")
        }
        var inside = samples
        if size < Int64.max { inside.remove(size..<Int64.max) }
        return inside
    }

    /// libavformat indexes a fragmented file's samples as it reads their `moof`; after the first
    /// `sidx` it stops reading ahead (a file with several lists 500 of its 600 samples). When the
    /// window ends past the last indexed sample and the file goes on, its packets are read from
    /// there to the window's end, which indexes the fragments in between, as a player reaching the
    /// window would read them.
    private static func indexFragments(
        upTo end: Double, context: FormatContext, streams: [Int],
        cancellation: Cancellation
    ) throws {
        guard let video = streams.first, let last = context.indexEntries(stream: video).last,
            last.time < end, let duration = context.durationSeconds, duration > last.time + 0.001
        else { return }
        try context.seek(seconds: last.decodeTime)
        let packet = try Packet()
        while try context.readPacket(into: packet) {
            if cancellation.isCancelled { throw MediaError.interrupted }
            if packet.streamIndex == video, let dts = packet.dts, context.seconds(dts, stream: video) >= end { break }
        }
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

    /// A window placed by index points that give positions but not sample sizes: from the point at
    /// or before the start (where decoding starts) to the first point at or after the end, plus
    /// the head of what follows (the demuxer reads into it to learn that the window has ended).
    /// `stop` is where the next point's bytes start (or the end of the file).
    typealias PointWindow = (range: Range<Int64>, stop: Int64, why: String, first: Double, last: Double?)

    /// With `proportional` points (an MP3's table of contents: bytes spread evenly enough between
    /// them), the window is planned to a little short of where the end falls between the points
    /// around it, not to the next one (a hundredth of the duration is 6 s of a 10-minute file), and
    /// the prefetch walks the frames to the real end (`MPEGAudioFrames`).
    private static func window(
        _ points: [(time: Double, position: Int64)], from: Double, to: Double, size: Int64,
        startTime: Double, placedBy: String, proportional: Bool = false
    ) -> PointWindow? {
        guard let first = points.last(where: { $0.time <= from }) ?? points.first, first.position < size else {
            return nil
        }
        let next = points.first { $0.time >= to && $0.position > first.position }
        let stop = min(size, next?.position ?? size)
        var end = stop
        // A point a hair before the container's start (rounding between time bases) is its start.
        let (firstTime, nextTime) = (max(0, first.time - startTime), next.map { $0.time - startTime })
        var why =
            "the window is \(placedBy) from "
            + String(format: "%.3f s to %@", firstTime, nextTime.map { String(format: "%.3f s", $0) } ?? "the end")
        if proportional, let next, let before = points.last(where: { $0.time < to && $0.position >= first.position }),
            next.time > before.time
        {
            // Less what a point's position may be off by (the table gives each as a 256th of the
            // size): the frames walked from the start fetch the rest, not the guess's overshoot.
            let guess =
                before.position
                + Int64(Double(next.position - before.position) * (to - before.time) / (next.time - before.time))
            end = max(first.position + MPEGAudioFrames.seekReads, guess - size / 256)
            why =
                "the window is \(placedBy) from "
                + String(
                    format: "%.3f s to %.3f s, where it falls between its points at %.3f s and %.3f s",
                    firstTime, to - startTime, before.time - startTime, next.time - startTime)
        }
        // Past a proportional end, the prefetch walks the frames (MPEGAudioFrames) to the real one;
        // before its start, the seek searches for a frame to start from.
        let following = proportional ? 0 : followingHead(end - first.position)
        let before = proportional ? MPEGAudioFrames.seekSearch : 0
        return (max(0, first.position - before)..<min(size, end + following), stop, why, firstTime, nextTime)
    }

    /// What is taken of the bytes after a window, where the demuxer reads the first sample past
    /// its end: a fiftieth of the window (a key frame of a 10 s 720p window, a few frames of an
    /// MP3's), between 4 and 64 KiB; the prefetch's reading of the window fetches any more it needs.
    static func followingHead(_ window: Int64) -> Int64 { min(mergeGap, max(4 << 10, window / 50)) }

    /// The fragments of a fragmented MP4 whose `sidx` or `mfra` was read in place of libavformat's walk: from
    /// the `moof` of the sync sample at or before the start to the first at or after the end. A
    /// muxer lets audio lag video when it interleaves, so another track's sample after the window
    /// can sit in a later fragment than the video's, behind its video: the window then reaches
    /// past the fragment where that track's own points pass the end (a window ending where a
    /// fragment starts could not be played offline: its audio lay behind that fragment's video).
    private static func fragmentWindow(
        _ timeline: FragmentTimeline?, context: FormatContext, streams: [Int],
        source: any MediaSource, from: Double, to: Double
    ) throws -> PointWindow? {
        guard let timeline, let size = try source.size() else { return nil }
        let placed: [(points: [(time: Double, position: Int64)], sample: Double?)] = streams.compactMap { stream in
            guard let id = context.containerID(stream: stream).map({ UInt32(bitPattern: $0) }),
                let points = timeline.randomAccess[id], let defaults = timeline.defaults[id], !points.isEmpty
            else { return nil }
            let timescale = Double(defaults.timescale)
            // One sample's duration: the last fragment's average, or what the trex gives.
            let sample =
                timeline.tracks.first { $0.id == id }?.lastRate.map { 1 / $0 }
                ?? defaults.sampleDuration.flatMap { $0 > 0 ? Double($0) / timescale : nil }
            return (
                points.map { (time: Double($0.time) / timescale, position: $0.moof) }.sorted { $0.time < $1.time },
                sample
            )
        }
        let through = timeline.foundThrough == .sidx ? "sidx" : "mfra"
        guard let lead = placed.first,
            let w = window(
                lead.points, from: from, to: to, size: size, startTime: context.startTime,
                placedBy: "the fragments its \(through) places")
        else { return nil }
        // Another track's first sample at or after the end can be the first of the fragment its
        // next point starts, behind that fragment's video run; the demuxer reads the video that is
        // within a second of it first (see `readOnTheWay`). Such a fragment is taken whole — unless
        // the fragment before holds a sample at or after the end: its run lasts a sample or more
        // past it (AAC's 21 ms samples, in fragments that start 27 ms after a video key frame).
        // A sample's duration unknown (a sidx says none), the prefetch's reading of the window
        // fetches that fragment if it is needed after all.
        let stop = placed.dropFirst().reduce(w.stop) { stop, track in
            let points = track.points
            guard let next = points.firstIndex(where: { $0.time > to && $0.position > w.range.lowerBound }) else {
                return size
            }
            guard let sample = track.sample, points[next].time - sample < to else { return stop }
            let whole =
                points[next].time < to + 1
                ? points[(next + 1)...].first { $0.position > points[next].position } : points[next]
            return max(stop, whole?.position ?? size)
        }
        return (
            w.range.lowerBound..<min(size, stop + followingHead(stop - w.range.lowerBound)), stop,
            "fragmented: " + w.why,
            w.first, w.last
        )
    }

    /// The bytes that hold the window, from Matroska's Cues (the clusters of key frames) or an MP3's
    /// table of contents (the hundredths of its duration). Nil without such points reaching it.
    ///
    /// libavformat reads a Matroska file's Cues on its first seek, not with the header (until then
    /// its index holds the key frames it has met): the planner seeks to the beginning first, which
    /// those key frames already cover — a seek further into a file without Cues would read its way
    /// there cluster by cluster.
    private static func pointWindow(
        context: FormatContext, streams: [Int], source: any MediaSource, cues: Bool?, from: Double,
        to: Double
    ) throws -> PointWindow? {
        guard context.formatName.hasPrefix("matroska") || context.formatName == "mp3", let size = try source.size()
        else { return nil }
        do { try context.seek(seconds: context.startTime) } catch { return nil }
        // Cues place a window past their last point too: from there to the end of the file.
        guard let points = streams.lazy.map({ context.positionedPoints(stream: $0) }).first(where: { !$0.isEmpty }),
            let last = points.last, last.decodeTime >= from || cues == true
        else { return nil }
        var placedBy =
            context.formatName == "mp3" ? "the stretch its table of contents places" : "the clusters its Cues place"
        if cues == false {
            // Without Cues the points are the key frames of the Clusters libavformat has read:
            // past the last one a window runs to the end of the file, right only for a window that
            // reaches it.
            let duration = try context.durationSeconds ?? MatroskaTail.duration(of: context, source: source)
            if last.decodeTime < to, duration.map({ to < context.startTime + $0 }) ?? true { return nil }
            placedBy = "the clusters whose key frames libavformat has read (no Cues) place"
        }
        // A seek compares its target with the points' own timestamps, not shifted by a decode delay
        // (an MP3's start time, its encoder's delay, is no such delay: 23 ms placed the window a
        // whole point, 6 s of a 10-minute file, before where the player's seek lands).
        return window(
            points.map { (time: $0.decodeTime, position: $0.position) }, from: from, to: to, size: size,
            startTime: context.startTime, placedBy: placedBy, proportional: context.formatName == "mp3"
        ).map { ($0.range, $0.stop, context.formatName + ": " + $0.why, $0.first, $0.last) }
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

    /// A byte window from the overall bit rate, for containers without an index (MPEG-TS, some MKV).
    private func estimate(
        context: FormatContext, source: any MediaSource, cues: Bool?, start: Double,
        seconds: Double
    ) throws -> (Range<Int64>, String) {
        guard let size = try source.size() else {
            throw MediaError.noTimeline(
                input: source.input,
                detail: "\(context.formatName) with no index and no known size here: "
                    + "nothing tells which bytes hold \(start) s, so no window can be prefetched")
        }
        let noCues = cues == false
        if noCues, start > 0 {
            throw MediaError.noTimeline(
                input: source.input,
                detail: "\(context.formatName) without Cues: a player seeks in it by "
                    + "reading every Cluster before the time, so no window at \(start) s can be prefetched "
                    + "(one from the start can: --start 0)")
        }
        let duration = try context.durationSeconds ?? MatroskaTail.duration(of: context, source: source)
        let bitRate = context.bitRate ?? duration.map { Int64(Double(size * 8) / max($0, 0.001)) }
        guard let bitRate, bitRate > 0 else {
            throw MediaError.noTimeline(
                input: source.input,
                detail: "\(context.formatName) with no index, no duration and no bit "
                    + "rate here: nothing tells which bytes hold \(start) s, so no window can be prefetched")
        }
        let bytesPerSecond = Double(bitRate) / 8
        let lower = min(size, Int64(start * bytesPerSecond))
        let upper = min(size, lower + Int64(seconds * bytesPerSecond * PrefetchPlanner.estimateMargin))
        let why =
            "\(context.formatName) has \(noCues ? "no Cues" : "no usable index here"): "
            + "the byte window is estimated from the bit rate "
            + "(\(bitRate / 1000) kb/s, +\(Int((PrefetchPlanner.estimateMargin - 1) * 100))%)"
        return (lower..<max(lower, upper), why)
    }
}
