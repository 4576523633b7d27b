import ByteSources
import Caching
import Containers
import FFmpeg
import Support

/// libavformat's own sample index, which gives each sample's position, size and time: an MP4's
/// sample tables, the fragments its demuxer walked (their moofs), an AVI's idx1. A window is its
/// samples, exactly; a thumbnail's key frame is one it lists.
struct SampleTableIndex: SeekIndex {
    let context: FormatContext
    let source: any MediaSource
    /// The top-level boxes of an ISO-BMFF file: whether its samples are in fragments.
    let layout: MP4Layout?

    init(_ context: FormatContext, source: any MediaSource, layout: MP4Layout?) {
        (self.context, self.source, self.layout) = (context, source, layout)
    }

    /// Per selected track, the index entries in the window: for video every sample from the key
    /// frame at or before the start, for other tracks from the sample that contains the start.
    /// Seeking puts every other track at the video key frame's decode time, so their samples are
    /// needed from there (a player drops them, but the demuxer reads them). Without entries for
    /// any of them, the bit rate estimates the window.
    func window(_ query: WindowQuery) throws -> SeekWindow {
        if layout?.fragmented == true {
            try indexFragments(upTo: query.to, streams: query.streams, cancellation: query.cancellation)
        }
        var samples = ByteRangeSet()
        // The samples the window plays, without the one after it that only tells the demuxer the
        // window has ended.
        var played = ByteRangeSet()
        var tracks: [PrefetchPlan.Track] = []
        var from = query.from
        var reachTime = -Double.infinity  // the latest decode time of a track's sample after the window
        var indexed: [[IndexEntry]] = []  // each planned track's, read once
        for index in query.streams {
            let entries = context.indexEntries(stream: index)
            guard !entries.isEmpty else { continue }
            indexed.append(entries)
            let kind = context.kind(ofStream: index)
            let chosen = SampleTableIndex.window(entries, from: from, to: query.to, fromKeyframe: kind == .video)
            if kind == .video, let keyframe = chosen.first { from = min(from, keyframe.decodeTime) }
            if let last = chosen.last { reachTime = max(reachTime, last.decodeTime) }
            for e in chosen {
                samples.insert(e.byteRange)
                if e.time < query.to { played.insert(e.byteRange) }
            }
            tracks.append(
                PrefetchPlan.Track(
                    index: index, kind: kind, samples: chosen.count,
                    bytes: chosen.reduce(0) { $0 + $1.size },
                    firstTime: chosen.first.map { $0.time - context.startTime },
                    lastTime: chosen.last.map { $0.time - context.startTime }))
        }
        guard !indexed.isEmpty else { return try BitRateIndex(context, source: source).window(query) }
        samples.formUnion(SampleTableIndex.readOnTheWay(indexed, samples: samples, from: query.to, to: reachTime))
        if let size = try source.size() {
            samples = try SampleTableIndex.withinFile(samples, played: played, size: size, input: source.input)
        }
        return .samples(samples, tracks: tracks.sorted { $0.index < $1.index })
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
        _ tracks: [[IndexEntry]], samples: ByteRangeSet, from end: Double, to reach: Double
    ) -> ByteRangeSet {
        guard let first = samples.ranges.first?.lowerBound, let last = samples.ranges.last?.lowerBound else {
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
    private func indexFragments(upTo end: Double, streams: [Int], cancellation: Cancellation) throws {
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

    /// Without entries, the duration and start time come from the first packets; a fragmented
    /// file libavformat walked indexes decode times, and how far presentation runs ahead of them
    /// (B-frames) comes from its first video packet (without it, `--at 4` took the key frame shown
    /// at 4.067 s, the next group of pictures).
    func learnTimes(of video: Int, timesGiven: Bool) throws {
        if context.indexEntries(stream: video).isEmpty || (context.durationSeconds == nil && !timesGiven) {
            try context.findStreamInfo()
        } else if layout?.movieExtends == true, !context.knowsStartTime(stream: video) {
            try context.learnStartTime(stream: video)
        }
    }

    func keyFrames(_ query: KeyFrameQuery) throws -> KeyFrameLookup {
        // A fragmented file's index can stop short of its end (libavformat read up to its sidx, and
        // no timeline took its place): its key frames are then the first fragment's only, and the
        // frames are found by seeking instead.
        let entries = context.indexEntries(stream: query.video)
        let stopsShort =
            layout?.movieExtends == true
            && entries.last.map { last in query.duration.map { last.time < query.offset + $0 - 2 } ?? false } == true
        let (listed, cut) = try listedKeyFrames(of: query.video, offset: query.offset, stopsShort: stopsShort)
        return .found(KeyFrames(listed: listed, at: query.times, cut: cut))
    }

    /// The key frames libavformat's index lists for `video`. A file cut short (a recording whose
    /// upload stopped) lists key frames it no longer holds: the last whole one stands for the
    /// times after it, and the note says so.
    func listedKeyFrames(of video: Int, offset: Double, stopsShort: Bool = false) throws -> ([IndexEntry], String?) {
        var keyframes = stopsShort ? [] : context.indexEntries(stream: video).filter(\.isKeyframe)
        guard let size = try source.size(), let cut = keyframes.first(where: { $0.byteRange.upperBound > size }) else {
            return (keyframes, nil)
        }
        keyframes.removeAll { $0.byteRange.upperBound > size }
        return (keyframes, Thumbnailer.cutNote(cut.time - offset))
    }
}
