import ByteSources
import RangeFetch
import Support

/// The sync samples at or before given times in a fragmented MP4 without an index (no `sidx`, no
/// `mfra`: a browser's MediaRecorder, a live recorder), found without reading every `moof` —
/// libavformat's only way, one request per fragment (311 for ten thumbnails of ten minutes).
///
/// For each time a read is placed where the `moof` boxes seen so far (and the file's two ends) put
/// it, long enough to hold the start of a fragment (a quarter more than the first one); `moof`
/// boxes are found in it by their type and their `mfhd`, and the track's run in each says the
/// fragment's decode times and which samples are sync samples. A fragment that ends before the
/// time leads to the next one (its `mdat` says where), read exactly; one that starts after it, or
/// holds no sync sample up to the time, to the one before it (it ends where that one starts). The first reads go out in one
/// parallel wave. The answer is a `RandomAccessPoint` per time, as an `mfra` would list it; a time
/// not found within a few reads makes the whole answer nil.
package struct FragmentScan {
    let source: any MediaSource
    let size: Int64
    let track: UInt32
    let defaults: [UInt32: TrackDefaults]
    /// A read: long enough to hold the start of a fragment.
    let window: Int64
    static let readsPerTime = 6

    /// The sync sample at or before each time (seconds as the container counts, presentation
    /// times `delay` ahead of decode times, in the track's time base) of `track`, whose `timeline`
    /// was read from its index or last fragment (`known`: the fragments its index places); nil when
    /// one could not be found.
    package static func randomAccess(
        at times: [Double], delay: Int64, track: UInt32, timeline: FragmentTimeline, layout: MP4Layout,
        known: [FragmentTimeline.RandomAccessPoint], source: any MediaSource, connections: Int,
        cancellation: Cancellation
    ) throws -> [FragmentTimeline.RandomAccessPoint]? {
        guard let size = try source.size(), let moof = layout.boxes.first(where: { $0.type == "moof" }),
            let ends = timeline.tracks.first(where: { $0.id == track }), let start = ends.start
        else { return nil }
        let fragment = (layout.boxes.first { $0.offset == moof.end }?.size ?? 0) + moof.size
        var scan = FragmentScan(
            source: source, size: size, track: track, defaults: timeline.defaults, first: (moof.offset, start),
            firstFragment: fragment, end: ends.end)
        scan.points += known.filter { $0.moof > moof.offset && $0.moof < size }.map { ($0.moof, $0.time) }
        scan.points.sort { $0.position < $1.position }
        let scale = Double(ends.timescale)
        let decodeTimes = times.map { max(start, Int64(($0 * scale).rounded(.down)) - delay) }
        guard let points = try scan.points(at: decodeTimes, connections: connections, cancellation: cancellation) else {
            return nil
        }
        return Array(Set(points)).sorted { $0.time < $1.time }
    }

    /// The fragments read so far, in the order found.
    private var seen: [Found] = []

    /// (offset, decode time of the track's first sample) of every `moof` seen, with the file's ends.
    private var points: [(position: Int64, time: Int64)]

    /// `first`: the first `moof` and the track's first decode time; `end`: the track's end.
    init(
        source: any MediaSource, size: Int64, track: UInt32, defaults: [UInt32: TrackDefaults],
        first: (moof: Int64, time: Int64), firstFragment: Int64, end: Int64
    ) {
        self.source = source
        self.size = size
        self.track = track
        self.defaults = defaults
        window = max(64 << 10, firstFragment + firstFragment / 4)
        points = [(first.moof, first.time), (size, max(end, first.time))]
    }

    /// The sync sample at or before each decode time, or nil when one could not be found.
    mutating func points(
        at times: [Int64], connections: Int,
        cancellation: Cancellation
    ) throws -> [FragmentTimeline.RandomAccessPoint]? {
        let wanted = Set(times).sorted()
        var prefetcher = Prefetcher()
        prefetcher.connections = connections
        let wave = wanted.map { placed($0) }
        try prefetcher.fetch(
            Prefetcher.merge(wave.flatMap { source.missingRanges(in: $0) }, gap: 0), source: source,
            cancellation: cancellation)
        var found: [Int64: FragmentTimeline.RandomAccessPoint] = [:]
        for (time, read) in zip(wanted, wave) {
            if cancellation.isCancelled { throw MediaError.interrupted }
            guard let point = try point(at: time, firstRead: read) else { return nil }
            found[time] = point
        }
        return times.map { found[$0]! }
    }

    private mutating func point(at wanted: Int64, firstRead: Range<Int64>) throws -> FragmentTimeline.RandomAccessPoint?
    {
        var read: Range<Int64>? = firstRead
        var time = wanted
        var reader = LocalBoxReader(source: source)
        // Reads back grow twice as long each time: a fragment far larger than the first one is
        // crossed in a few requests.
        var back = window
        for _ in 0..<FragmentScan.readsPerTime {
            let range = read ?? placed(time)
            // A fragment read before that holds the time (with its sync sample) needs no read.
            let fragments =
                try seen.last(where: { $0.samples.start <= time && time < $0.samples.end }).map { [$0] }
                ?? moofs(in: range, reader: &reader)
            points.append(contentsOf: fragments.map { ($0.offset, $0.samples.start) })
            points.sort { $0.position < $1.position }
            guard let earliest = fragments.first?.offset else {
                read = max(points[0].position, range.lowerBound - back)..<range.upperBound  // no moof starts here: more before
                back *= 2
                continue
            }
            if let holding = fragments.last(where: { $0.samples.start <= time }) {
                if time < holding.samples.end || holding.next == nil {
                    if let sync = holding.samples.syncs.last(where: { $0.time <= time }) {
                        return FragmentTimeline.RandomAccessPoint(
                            time: sync.time, moof: holding.offset, traf: 0, trun: sync.trun,
                            sample: sync.sample)
                    }
                    // No sync sample in it up to the time (fragments shorter than a group of
                    // pictures): the last one of the fragments before.
                    guard holding.offset > points[0].position else { return nil }
                    time = holding.samples.start - 1
                    read = max(points[0].position, holding.offset - back)..<holding.offset
                    back *= 2
                    continue
                }
                // The time is further on: the next fragment, exactly where its `mdat` says.
                guard let next = holding.next else { return nil }
                read = next..<min(size, next + window / 4)
            } else {
                // Every fragment here starts after the time: the one before the earliest ends where it starts.
                guard earliest > points[0].position else { return nil }
                read = max(points[0].position, earliest - back)..<earliest
                back *= 2
            }
        }
        return nil
    }

    /// A read ending a fifth of a window after where the fragments seen put `time`.
    private func placed(_ time: Int64) -> Range<Int64> {
        let below = points.last { $0.time <= time } ?? points[0]
        let above = points.first { $0.position > below.position && $0.time > time } ?? points[points.count - 1]
        var guess = below.position
        if above.time > below.time {
            guess += Int64(
                Double(time - below.time) / Double(above.time - below.time) * Double(above.position - below.position))
        }
        let end = min(size, max(guess + window / 5, points[0].position + window))
        return max(points[0].position, end - window)..<end
    }

    /// One `moof` found in a read: its track's samples, and where the next top-level box after
    /// its `mdat` starts (nil at the end of the file, or when that is not known here).
    private struct Found {
        let offset: Int64
        let samples: FragmentSamples
        let next: Int64?
    }

    /// The `moof` boxes whole in `range`, in order, that have a run of the track and are followed
    /// by an `mdat` (a copy of a moof inside media data is not).
    private mutating func moofs(in range: Range<Int64>, reader: inout LocalBoxReader) throws -> [Found] {
        try source.prefetch(range)
        let bytes = try source.bytes(at: range.lowerBound, count: Int(range.count))
        let moof = Array("moof".utf8), mfhd = Array("mfhd".utf8)
        var found: [Found] = []
        var p = 0
        while p + 16 <= bytes.count {
            guard bytes[p + 4..<p + 8].elementsEqual(moof), bytes[p + 12..<p + 16].elementsEqual(mfhd) else {
                p += 1
                continue
            }
            let offset = range.lowerBound + Int64(p)
            guard let box = try StatedBox.readIfWellFormed(from: source, at: offset), let boxSize = box.size,
                boxSize <= range.upperBound - offset,
                let samples = FragmentSamples(
                    moof: offset + Int64(box.headerSize)..<offset + boxSize, track: track,
                    defaults: defaults, reader: &reader)
            else {
                p += 1
                continue
            }
            guard let data = try mediaData(at: offset + boxSize) else {
                p += 1
                continue
            }
            found.append(Found(offset: offset, samples: samples, next: data.upperBound < size ? data.upperBound : nil))
            p += Int(boxSize)
        }
        for fragment in found where !seen.contains(where: { $0.offset == fragment.offset }) { seen.append(fragment) }
        return found
    }

    /// The `mdat` at `offset`, when its header is here; it may run to the end of the file.
    private func mediaData(at offset: Int64) throws -> Range<Int64>? {
        guard offset + 8 <= size, source.isLocal(offset..<min(size, offset + 16)),
            let box = try StatedBox.readIfWellFormed(from: source, at: offset), box.type == "mdat"
        else { return nil }
        return offset..<min(size, offset + (box.size ?? size - offset))
    }
}

/// One track's run in a `moof`: its decode times and its sync samples, numbered as a `tfra` entry
/// numbers them (the `trun` within the track's `traf`, the sample within the `trun`, from 1).
package struct FragmentSamples {
    let start: Int64
    let end: Int64
    let syncs: [(time: Int64, trun: UInt32, sample: UInt32)]

    /// Nil when the `moof` whose body is `body` has no readable run of `track`, or it lacks its
    /// decode time (`tfdt`).
    init?(moof body: Range<Int64>, track: UInt32, defaults: [UInt32: TrackDefaults], reader: inout LocalBoxReader) {
        for (traf, body) in reader.children(of: body) where traf.type == "traf" {
            if let parsed = FragmentSamples(traf: body, track: track, defaults: defaults[track], reader: &reader) {
                self = parsed
                return
            }
        }
        return nil
    }

    private init?(traf: Range<Int64>, track: UInt32, defaults: TrackDefaults?, reader: inout LocalBoxReader) {
        var start: Int64?
        var time: Int64 = 0
        var trun: UInt32 = 0
        var defaultDuration = defaults?.sampleDuration
        var defaultFlags = defaults?.sampleFlags
        var syncs: [(Int64, UInt32, UInt32)] = []
        for (box, body) in reader.children(of: traf) {
            guard ["tfhd", "tfdt", "trun"].contains(box.type),
                let bytes = reader.bytes(at: body.lowerBound, count: body.count)
            else { continue }
            var fields = FieldReader(bytes)
            guard let (version, flags) = fields.versionAndFlags() else { return nil }
            switch box.type {
            case "tfhd":
                guard fields.u32() == track else { return nil }
                if flags & 0x01 != 0 { guard fields.skip(8) else { return nil } }
                if flags & 0x02 != 0 { guard fields.skip(4) else { return nil } }
                if flags & 0x08 != 0 { defaultDuration = fields.u32() }
                if flags & 0x10 != 0 { guard fields.skip(4) else { return nil } }
                if flags & 0x20 != 0 { defaultFlags = fields.u32() }
            case "tfdt":
                guard let base = fields.uint(version == 1 ? 8 : 4), base <= UInt64(Int64.max / 4) else { return nil }
                start = Int64(base)
                time = Int64(base)
            default:  // trun
                guard start != nil, let count = fields.u32() else { return nil }
                trun += 1
                if flags & 0x01 != 0 { guard fields.skip(4) else { return nil } }
                var firstFlags: UInt32?
                if flags & 0x04 != 0 { firstFlags = fields.u32() }
                let listed = [0x100, 0x200, 0x400, 0x800].filter { flags & $0 != 0 }.count * 4
                guard Int64(count) * Int64(listed) <= Int64(fields.remaining), count <= 1_000_000 else { return nil }
                for sample in UInt32(1)..<count + 1 {
                    var duration = defaultDuration
                    var sampleFlags = sample == 1 ? firstFlags ?? defaultFlags : defaultFlags
                    if flags & 0x100 != 0 { duration = fields.u32() }
                    if flags & 0x200 != 0 { guard fields.skip(4) else { return nil } }
                    if flags & 0x400 != 0 { sampleFlags = fields.u32() }
                    if flags & 0x800 != 0 { guard fields.skip(4) else { return nil } }
                    // Neither sample_is_non_sync_sample (bit 16) nor "depends on others" (bits 24-25
                    // = 1), as libavformat reads them; no flags at all: every sample is one.
                    if (sampleFlags ?? 0) & 0x0101_0000 == 0 { syncs.append((time, trun, sample)) }
                    guard let duration else { return nil }
                    time += Int64(duration)
                }
            }
        }
        guard let start else { return nil }
        self.start = start
        end = time
        self.syncs = syncs
    }
}
