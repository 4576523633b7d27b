import ByteSources
import Caching
import RangeFetch
import Support

/// The key frames a job seeks to in a fragmented MP4 whose `moof` boxes libavformat has not read
/// (`FormatContext.Fragments.throughIndex`): the `mfra` says at what time each sync sample is and
/// in which `moof`; that `moof`'s track run says where its bytes are. Two parallel waves: the
/// chosen `moof` boxes, then (by the caller) the key frames themselves.
package struct FragmentKeyFrames {
    package var timeline: FragmentTimeline
    package let track: UInt32
    let source: any MediaSource
    /// The bytes fetched from a `moof` before its size is known (the caller's guess of a moof and
    /// the key frame after it).
    let moofGuess: Int64

    package init(timeline: FragmentTimeline, track: UInt32, source: any MediaSource, moofGuess: Int64) {
        (self.timeline, self.track, self.source, self.moofGuess) = (timeline, track, source, moofGuess)
    }

    /// A key frame, and where the fragment it starts ends: the frames after it, up to the next key
    /// frame the index lists, are in `entry.position..<fragmentEnd`.
    package struct KeyFrame {
        package let entry: IndexEntry
        package let fragmentEnd: Int64
    }

    /// For each time (seconds, as the container counts), the key frame at or before it (the first
    /// one before any), as an index entry with its byte range; `delay` (the stream's decode delay,
    /// in its time base) turns decode times into presentation times. Nil entries: the `moof` or
    /// its run could not be read, or the sample listed is not a sync sample.
    package func keyFrames(
        at times: [Double], delay: Int64, connections: Int, cancellation: Cancellation
    ) throws -> [KeyFrame?] {
        guard let defaults = timeline.defaults[track],
            let points = timeline.randomAccess[track]?.sorted(by: { $0.time < $1.time }),
            !points.isEmpty, let size = try source.size()
        else { return times.map { _ in nil } }
        let scale = 1 / Double(defaults.timescale)
        let delaySeconds = Double(delay) * scale
        let chosen = times.map { time in points.last { Double($0.time) * scale + delaySeconds <= time } ?? points[0] }

        let moofs = Set(chosen.map(\.moof)).sorted()
        let wave = moofs.flatMap { source.missingRanges(in: $0..<min(size, $0 + moofGuess)) }
        var prefetcher = Prefetcher()
        prefetcher.connections = connections
        try prefetcher.fetch(wave, source: source, cancellation: cancellation)

        var reader = LocalBoxReader(source: source)
        var ranges: [FragmentTimeline.RandomAccessPoint: Range<Int64>?] = [:]
        return try chosen.map { point in
            if ranges[point] == nil {
                ranges[point] = try sampleRange(point, defaults: defaults, size: size, reader: &reader)
                    .flatMap { try isSync(point, reader: &reader) ? $0 : nil }
            }
            guard let range = ranges[point] ?? nil else { return nil }
            let (timestamp, overflow) = point.time.addingReportingOverflow(delay)
            guard !overflow else { return nil }
            let entry = IndexEntry(
                position: range.lowerBound, size: Int64(range.count), time: Double(timestamp) * scale,
                timestamp: timestamp, decodeTime: Double(point.time) * scale, isKeyframe: true)
            let next = points.first { $0.moof > range.lowerBound }?.moof ?? size
            return KeyFrame(entry: entry, fragmentEnd: max(range.upperBound, next))
        }
    }

    /// Whether the run says the sample `point` names is a sync sample: an `mfra` from ffmpeg lists
    /// every fragment's first sample, also where fragments are cut shorter than a group of pictures.
    private func isSync(_ point: FragmentTimeline.RandomAccessPoint, reader: inout LocalBoxReader) throws -> Bool {
        guard let moof = try StatedBox.readIfWellFormed(from: source, at: point.moof), let size = moof.size,
            let samples = FragmentSamples(
                moof: point.moof + Int64(moof.headerSize)..<point.moof + size, track: track,
                defaults: timeline.defaults, reader: &reader)
        else { return false }
        return samples.syncs.contains { $0.trun == point.trun && $0.sample == point.sample }
    }

    /// The track ID of a `traf`'s `tfhd`.
    private func trackID(of traf: Range<Int64>, reader: inout LocalBoxReader) -> UInt32? {
        guard let tfhd = reader.children(of: traf).first(where: { $0.box.type == "tfhd" }),
            let bytes = reader.bytes(at: tfhd.body.lowerBound, count: 8)
        else { return nil }
        var fields = FieldReader(bytes)
        return fields.skip(4) ? fields.u32() : nil
    }

    /// Where the sample `point` names is: its `traf`'s base (an explicit base offset, or the
    /// `moof` for the first `traf` or with default-base-is-moof), its `trun`'s data offset, and
    /// the sizes of the samples before it. Nil for what this does not follow (a later `traf` or
    /// `trun` that continues where the previous one ended) or for bytes outside the file.
    private func sampleRange(
        _ point: FragmentTimeline.RandomAccessPoint, defaults: TrackDefaults, size: Int64,
        reader: inout LocalBoxReader
    ) throws -> Range<Int64>? {
        if !source.isLocal(point.moof..<min(size, point.moof + 16)) {
            try source.prefetch(point.moof..<min(size, point.moof + moofGuess))
        }
        guard let moof = try StatedBox.readIfWellFormed(from: source, at: point.moof), moof.type == "moof",
            let moofSize = moof.size, moofSize <= min(size - point.moof, FragmentTimeline.maximumBox)
        else { return nil }
        if !source.isLocal(point.moof..<point.moof + moofSize) {
            try source.prefetch(point.moof..<point.moof + moofSize)
        }
        let trafs = reader.children(of: point.moof + Int64(moof.headerSize)..<point.moof + moofSize).filter {
            $0.box.type == "traf"
        }
        // The track's own traf (a sidx does not number them); else the one the tfra numbers.
        guard
            let number = trafs.firstIndex(where: { trackID(of: $0.body, reader: &reader) == track }).map({ $0 + 1 })
                ?? (point.traf >= 1 && Int(point.traf) <= trafs.count ? Int(point.traf) : nil)
        else { return nil }
        var base: Int64?
        var defaultSize = defaults.sampleSize
        var runs: [[UInt8]] = []
        for (box, body) in reader.children(of: trafs[number - 1].body) where box.type == "tfhd" || box.type == "trun" {
            guard let bytes = reader.bytes(at: body.lowerBound, count: body.count) else { return nil }
            if box.type == "trun" { runs.append(bytes); continue }
            var fields = FieldReader(bytes)
            guard let (_, flags) = fields.versionAndFlags(), fields.skip(4) else { return nil }
            if flags & 0x01 != 0 {
                guard let offset = fields.uint(8), offset < UInt64(size) else { return nil }
                base = Int64(offset)
            } else if number == 1 || flags & 0x2_0000 != 0 {
                base = point.moof
            }
            if flags & 0x02 != 0 { guard fields.skip(4) else { return nil } }
            if flags & 0x08 != 0 { guard fields.skip(4) else { return nil } }
            if flags & 0x10 != 0 { defaultSize = fields.u32() }
        }
        guard let base, point.trun >= 1, Int(point.trun) <= runs.count else { return nil }
        var fields = FieldReader(runs[Int(point.trun) - 1])
        guard let (_, flags) = fields.versionAndFlags(), let count = fields.u32(), point.sample >= 1,
            point.sample <= count
        else { return nil }
        var start = base
        if flags & 0x01 != 0 {
            guard let raw = fields.u32() else { return nil }
            start += Int64(Int32(bitPattern: raw))  // signed: relative to the base
        } else if point.trun != 1 {
            return nil
        }
        if flags & 0x04 != 0 { guard fields.skip(4) else { return nil } }
        let perSample = [0x100, 0x200, 0x400, 0x800].filter { flags & $0 != 0 }.count * 4
        var sampleSize = defaultSize
        if flags & 0x200 == 0 {
            // One size for every sample: the position is arithmetic, whatever the count claims.
            guard let each = defaultSize else { return nil }
            let (skipped, overflow) = Int64(point.sample - 1).multipliedReportingOverflow(by: Int64(each))
            guard !overflow, skipped < size else { return nil }
            start += skipped
        } else {
            guard Int64(point.sample) * Int64(perSample) <= Int64(fields.remaining) else { return nil }
            for index in 1...point.sample {
                if flags & 0x100 != 0 { guard fields.skip(4) else { return nil } }
                sampleSize = fields.u32()
                guard fields.skip(perSample - 4 - (flags & 0x100 != 0 ? 4 : 0)), let bytes = sampleSize else {
                    return nil
                }
                if index < point.sample { start += Int64(bytes) }
            }
        }
        guard let sampleSize, sampleSize > 0, start >= 0, start <= size - Int64(sampleSize) else { return nil }
        return start..<start + Int64(sampleSize)
    }
}
