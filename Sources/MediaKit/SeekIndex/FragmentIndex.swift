import ByteSources
import Caching
import Containers
import FFmpeg
import Support

/// A fragmented MP4 whose fragments are placed by its `sidx` or `mfra`, or found from its last
/// fragment (`FragmentTimeline`), in place of libavformat's walk of every `moof` (its index then
/// holds the fragments it has read). A window runs from the `moof` of the sync sample at or before
/// its start to the first at or after its end; a thumbnail's key frame is read from its fragment
/// (`FragmentKeyFrames`), or found from the fragments' bytes (`FragmentScan`) when the index does
/// not list it. A track the timeline does not know is seeked in as libavformat's index places it.
struct FragmentIndex: SeekIndex {
    let timeline: FragmentTimeline
    let layout: MP4Layout?
    /// The fragments libavformat has read: the first one's key frames, and any track the timeline lacks.
    let libavformat: SampleTableIndex

    var context: FormatContext { libavformat.context }
    var source: any MediaSource { libavformat.source }
    var statedDuration: Double? { timeline.tracks.map(\.seconds).max() ?? context.durationSeconds }

    /// The track `stream` is in the `moof`s, when the timeline knows it.
    private func track(_ stream: Int) -> UInt32? {
        context.containerID(stream: stream).map { UInt32(bitPattern: $0) }
    }

    /// A muxer lets audio lag video when it interleaves, so another track's sample after the window
    /// can sit in a later fragment than the video's, behind its video: the window then reaches
    /// past the fragment where that track's own points pass the end (a window ending where a
    /// fragment starts could not be played offline: its audio lay behind that fragment's video).
    func window(_ query: WindowQuery) throws -> SeekWindow {
        guard let size = try source.size() else { return try BitRateIndex(context, source: source).window(query) }
        let (from, to) = (query.from, query.to)
        let placed: [(points: [(time: Double, position: Int64)], sample: Double?)] = query.streams.compactMap {
            stream in
            guard let id = track(stream), let points = timeline.randomAccess[id], let defaults = timeline.defaults[id],
                !points.isEmpty
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
            let w = PointWindow(
                lead.points, from: from, to: to, size: size, startTime: context.startTime,
                placedBy: "the fragments its \(through) places")
        else { return try BitRateIndex(context, source: source).window(query) }
        // Another track's first sample at or after the end can be the first of the fragment its
        // next point starts, behind that fragment's video run; the demuxer reads the video that is
        // within a second of it first (see `SampleTableIndex.readOnTheWay`). Such a fragment is
        // taken whole — unless the fragment before holds a sample at or after the end: its run
        // lasts a sample or more past it (AAC's 21 ms samples, in fragments that start 27 ms after
        // a video key frame). A sample's duration unknown (a sidx says none), the prefetch's
        // reading of the window fetches that fragment if it is needed after all.
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
        return .points(
            PointWindow(
                range: w.range.lowerBound..<min(size, stop + PointWindow.followingHead(stop - w.range.lowerBound)),
                stop: stop, why: "fragmented: " + w.why, first: w.first, last: w.last))
    }

    func learnTimes(of video: Int, timesGiven: Bool) throws {
        if track(video) == nil { try libavformat.learnTimes(of: video, timesGiven: timesGiven) }
    }

    /// Each key frame's moof first (twice the first one's size: they are alike), then, knowing
    /// where it is, the key frame itself: the bytes the pictures need, one round trip more.
    /// (Fetching a guess of both at once moved 1.9 times as much.) A file whose timeline came from
    /// its last fragment, or whose index lists samples that are not sync samples, has its sync
    /// samples found by `FragmentScan` and decoded from their bytes: libavformat's seek would land
    /// on the last key frame it has read.
    func keyFrames(_ query: KeyFrameQuery) throws -> KeyFrameLookup {
        guard let id = track(query.video) else { return try libavformat.keyFrames(query) }
        let (listed, cut) = try libavformat.listedKeyFrames(of: query.video, offset: query.offset)
        let firstMoof = layout?.boxes.first { $0.type == "moof" }?.size ?? 0
        var fragments = FragmentKeyFrames(
            timeline: timeline, track: id, source: source, moofGuess: max(4 << 10, 2 * firstMoof + 16))
        let (times, delay) = (query.times, context.decodeDelay(stream: query.video))
        var found = try fragments.keyFrames(
            at: times, delay: delay, connections: query.connections, cancellation: query.cancellation)
        var fromBytes = false
        if let layout, timeline.foundThrough == .tail || found.contains(where: { $0 == nil }) {
            guard
                let points = try FragmentScan.randomAccess(
                    at: times, delay: delay, track: id, timeline: timeline, layout: layout,
                    known: timeline.randomAccess[id] ?? [], source: source,
                    connections: query.connections, cancellation: query.cancellation)
            else { return .unplaced }
            fragments.timeline.randomAccess = [id: points]
            fromBytes = true
            found = try fragments.keyFrames(
                at: times, delay: delay, connections: query.connections, cancellation: query.cancellation)
            if found.contains(where: { $0 == nil }) { return .unplaced }
        }
        var keys = KeyFrames(listed: listed, at: times, cut: cut)
        keys.chosen = found.map { $0?.entry }
        keys.fromBytes = fromBytes
        keys.fragmentEnds = found.compactMap { $0.map { (key: $0.entry, end: $0.fragmentEnd) } }
        return .found(keys)
    }

    func placesSeeks(of video: Int) -> Bool { track(video) != nil || libavformat.placesSeeks(of: video) }

    /// A fragment, from one sync sample the timeline lists to the next (the last to the track's
    /// end), counts when all its bytes are cached.
    func buffered(streams: [Int]?) -> [TrackBuffer] {
        guard let size = try? source.size() else { return [] }
        return (streams ?? Array(0..<context.streamCount)).compactMap { index in
            guard let id = track(index), let points = timeline.randomAccess[id]?.sorted(by: { $0.moof < $1.moof }),
                !points.isEmpty, let track = timeline.tracks.first(where: { $0.id == id })
            else { return nil }
            let scale = 1 / Double(track.timescale)
            let startTime = context.startTime
            let span = points[0].moof..<size
            let present = ByteRangeSet([span]).subtracting(source.missingRanges(in: span))
            var ranges: [Range<Double>] = []
            for (i, point) in points.enumerated() {
                let bytes = point.moof..<(i + 1 < points.count ? points[i + 1].moof : size)
                guard !bytes.isEmpty, present.contains(bytes) else { continue }
                let lower = Double(point.time) * scale - startTime
                let upper = max(
                    lower, (i + 1 < points.count ? Double(points[i + 1].time) * scale : track.seconds) - startTime)
                if let last = ranges.last, abs(last.upperBound - lower) < 1e-9 {
                    ranges[ranges.count - 1] = last.lowerBound..<upper
                } else {
                    ranges.append(lower..<upper)
                }
            }
            return TrackBuffer(index: index, kind: context.kind(ofStream: index), ranges: ranges)
        }
    }
}
