import ByteSources

/// Where the tracks of a fragmented MP4 end, read from the file's index and its last fragment
/// instead of from every `moof`. Given a seekable input, libavformat reads every `moof` before it
/// reports a duration (300 requests for ten minutes cut every two seconds); told to ignore the
/// index (`AVFMT_FLAG_IGNIDX`), it reads only the first fragment and reports that one's length.
///
/// The last `moof` is found through the `mfra` box (its size is in the `mfro` box that ends the
/// file) or, in a file without one, in a bounded read of the file's tail, where a candidate counts
/// only if the top-level boxes from it lead exactly to the end of the file. Its track fragments
/// give each track's end: `tfdt` (the decode time of the fragment's first sample) plus the
/// durations its `trun` boxes list, or their defaults from `tfhd` or the moov's `trex`.
///
/// Requests: the last 16–256 KiB, sized for the `mfra` the first fragment suggests (`mfraGuess`;
/// the `mfro`, and an `mfra` larger than that read on), then the last `moof` if that read did not
/// hold it; without `mfra`, the tail of the file up to twice the
/// first fragment's size instead. Every size read from the file is checked against the file.
package struct FragmentTimeline: Sendable, Equatable {
    package struct Track: Sendable, Equatable {
        package let id: UInt32
        package let timescale: UInt32
        /// The end of the track's last sample, as decode time in `timescale` units.
        let end: Int64
        /// The samples of the last fragment and their total duration: the frame rate at the end.
        let lastSamples: Int64
        let lastDuration: Int64
        /// The decode time of the first fragment's first sample, when the first fragment has the track.
        let start: Int64?
        package var seconds: Double { Double(end) / Double(timescale) }
        package var startSeconds: Double? { start.map { Double($0) / Double(timescale) } }
        package var lastRate: Double? {
            lastSamples > 1 && lastDuration > 0 ? Double(lastSamples) * Double(timescale) / Double(lastDuration) : nil
        }
    }

    /// What the track fragments of one `moof` say of one track.
    private struct Run {
        var end: Int64
        var samples: Int64
        var duration: Int64
    }

    /// Where the timeline came from.
    package enum Index: Sendable {
        /// The `sidx` boxes after the moov: every fragment's time and place, no tail read.
        case sidx
        /// The `mfra` at the end, and the last fragment.
        case mfra
        /// The last fragment, found in the tail.
        case tail
    }

    /// A sync sample the `mfra` lists: its decode time (track timescale), the offset of its `moof`,
    /// and where it is in there (1-based numbers of its `traf`, `trun` and sample).
    package struct RandomAccessPoint: Sendable, Hashable {
        package let time: Int64
        package let moof: Int64
        let traf: UInt32
        let trun: UInt32
        let sample: UInt32
    }

    package let tracks: [Track]
    package let foundThrough: Index
    /// By track ID, in file order; empty without an `mfra` (but for the points `FragmentScan` finds).
    package var randomAccess: [UInt32: [RandomAccessPoint]]
    /// The first fragment's runs list composition offsets (B-frames): libavformat, reading
    /// fragments as seeks reach them, then shifts presentation times from where it puts them after
    /// reading every fragment (two frames in a file from x264), so seeking jobs read them all.
    package let reordered: Bool
    /// What the moov says of each track.
    package let defaults: [UInt32: TrackDefaults]

    static let tailRead: Int64 = 64 << 10

    /// The first read of the tail: the `mfro` and the `mfra` before it, sized by the number of
    /// fragments the first one suggests — a `tfra` entry for each fragment of each track, at most
    /// 28 bytes, half as much again — between 16 KiB and 256 KiB (ffmpeg's for 300 fragments of
    /// two tracks is 11 KB). A larger `mfra` has the rest read on; a fixed 64 KiB was most of
    /// what a thumbnail job reads besides its key frames.
    static func mfraGuess(_ fragmented: Int64, fragment: Int64, tracks: Int) -> Int64 {
        guard fragment > 0 else { return tailRead }
        let entries = min(fragmented / fragment + 1, 1 << 20) * Int64(min(max(1, tracks), 1 << 10))
        return min(256 << 10, max(16 << 10, entries * 42 + (1 << 10)))
    }
    static let minimumScan: Int64 = 256 << 10
    static let maximumScan: Int64 = 16 << 20
    static let maximumBox: Int64 = 16 << 20

    /// Nil when the moov does not describe fragments, or when the last fragment cannot be found or
    /// read (no `tfdt`, a damaged `mfra` and a tail without a verifiable `moof`). `randomAccessOnly`:
    /// nil without a `sidx` or `mfra` too, before the tail is searched for the last `moof` (a job
    /// that seeks has no use for a timeline without random access points).
    package static func read(
        layout: MP4Layout, source: any MediaSource, randomAccessOnly: Bool = false
    ) throws -> FragmentTimeline? {
        guard let moov = layout.moov, let size = try source.size(), size > moov.end else { return nil }
        var reader = LocalBoxReader(source: source)
        let defaults = TrackDefaults.read(moov: moov, reader: &reader)
        guard !defaults.isEmpty else { return nil }
        let firstMoof = layout.boxes.first { $0.type == "moof" }
        let reordered = firstMoof.map { hasCompositionOffsets($0, reader: &reader) } ?? true
        if layout.hasSegmentIndex {
            return try fromSegmentIndexes(
                layout.boxes.filter { $0.type == "sidx" }, size: size, defaults: defaults,
                reordered: reordered, source: source, reader: &reader)
        }

        let fragment =
            firstMoof.map { moof in (layout.boxes.first { $0.offset == moof.end }?.size ?? 0) + moof.size } ?? 0
        try source.prefetch(
            max(moov.end, size - mfraGuess(size - moov.end, fragment: fragment, tracks: defaults.count))..<size)
        var foundThrough = Index.mfra
        var randomAccess = try randomAccessPoints(size: size, source: source, reader: &reader)
        var lastMoof = randomAccess.values.joined().map(\.moof).max()
        // The mfra's last moof must be the file's: its chain of boxes runs through the mfra to the
        // end (a tfra may list some fragments only). Else the mfra is not used at all.
        if let listed = lastMoof {
            // Two reads: the moof's head (its fragment's end is read from it anyway), an mdat header past a large one.
            var search = MoofSearch(reads: 2)
            if try lastMoofOfChain(from: listed, size: size, source: source, search: &search) != listed {
                (lastMoof, randomAccess) = (nil, [:])
            }
        }
        if lastMoof == nil {
            if randomAccessOnly { return nil }
            foundThrough = .tail
            // The last moof sits about a fragment before the end (a whole fragment's media data
            // follows it): a window there first, as the first fragment's size places it, and the
            // chain followed from a moof in it (a read more for each fragment it falls short).
            var scan: Int64 = 0
            if fragment > 0 {
                var search = MoofSearch(reads: 2)
                var window = lastMoofWindow(before: size, fragment: fragment, from: moov.end)
                try source.prefetch(window)
                lastMoof = try chainedLastMoof(in: window, size: size, source: source, search: &search)
                // A chain that ran out of reads there measured the fragments: a window again, by them.
                if lastMoof == nil, let step = search.step, step < fragment / 2 {
                    window = lastMoofWindow(before: size, fragment: step, from: moov.end)
                    try source.prefetch(window)
                    search.reads = 2
                    lastMoof = try chainedLastMoof(in: window, size: size, source: source, search: &search)
                }
                scan = window.upperBound < size ? 0 : size - window.lowerBound
                // Missed: a last fragment cut short puts its moof after the window: that first.
                if lastMoof == nil, window.upperBound < size, size - window.upperBound <= maximumScan {
                    try source.prefetch(window.upperBound..<size)
                    lastMoof = try chainedLastMoof(
                        in: window.upperBound..<size, size: size, source: source, search: &search)
                    scan = size - window.upperBound
                }
            }
            // Twice the first fragment, then growing fourfold (fragments that grow, a short first
            // one) to the most a probe reads of a tail.
            let scans = [max(minimumScan, 2 * fragment + tailRead), 1 << 20, 4 << 20, maximumScan].map {
                min($0, maximumScan)
            }
            for wanted in scans where lastMoof == nil && wanted > scan {
                scan = min(size - moov.end, wanted)
                try source.prefetch(size - scan..<size)
                var search = MoofSearch(reads: 0)
                lastMoof = try chainedLastMoof(in: size - scan..<size, size: size, source: source, search: &search)
                if scan == size - moov.end { break }
            }
        }
        guard let lastMoof else { return nil }
        guard
            var ends = try ends(
                ofMoofAt: lastMoof, size: size, guess: 2 * (firstMoof?.size ?? 0),
                defaults: defaults, source: source, reader: &reader)
        else { return nil }
        // A moof per track (Smooth Streaming's ISMV): a track the last moof lacks ends in the last
        // moof the mfra lists for it.
        for (id, points) in randomAccess where ends[id] == nil {
            guard let moof = points.map(\.moof).max(), moof != lastMoof,
                let run = try Self.ends(
                    ofMoofAt: moof, size: size, guess: 2 * (firstMoof?.size ?? 0), defaults: defaults,
                    source: source, reader: &reader)?[id]
            else { continue }
            ends[id] = run
        }
        // The first fragment is local since the walk: where each track starts, without a request.
        let starts =
            try firstMoof.flatMap { moof in
                try Self.ends(
                    ofMoofAt: moof.offset, size: size, guess: 0, defaults: defaults, source: source, reader: &reader)
            } ?? [:]
        let tracks = ends.compactMap { id, run in
            defaults[id].map {
                Track(
                    id: id, timescale: $0.timescale, end: run.end, lastSamples: run.samples,
                    lastDuration: run.duration, start: starts[id].map { $0.end - $0.duration })
            }
        }
        guard !tracks.isEmpty else { return nil }
        return FragmentTimeline(
            tracks: tracks.sorted { $0.id < $1.id }, foundThrough: foundThrough,
            randomAccess: foundThrough == .mfra ? randomAccess : [:], reordered: reordered, defaults: defaults)
    }

    /// The timeline the `sidx` boxes give (one per track, as DASH on-demand files have them): each
    /// reference a fragment starting with a sync sample, at `earliest_presentation_time` plus the
    /// durations before it and `first_offset` plus the sizes before it. Nil for what this does not
    /// follow (a `sidx` that points at other `sidx`, a fragment that does not start with a sync
    /// sample) or sizes outside the file, and when the references do not cover the file: they must
    /// end at its end, or where an `mfra` that ends it starts (as libavformat decides a `sidx` is
    /// complete). A `sidx` per segment, each before its own, covers only the first segment.
    private static func fromSegmentIndexes(
        _ boxes: [BoxHeader], size: Int64, defaults: [UInt32: TrackDefaults], reordered: Bool,
        source: any MediaSource, reader: inout LocalBoxReader
    ) throws -> FragmentTimeline? {
        var points: [UInt32: [RandomAccessPoint]] = [:]
        var tracks: [Track] = []
        for box in boxes {
            guard box.size <= maximumBox else { return nil }
            if !source.isLocal(box.range) { try source.prefetch(box.range) }
            guard
                let bytes = reader.bytes(at: box.offset + Int64(box.headerSize), count: Int(box.size) - box.headerSize)
            else { return nil }
            var fields = FieldReader(bytes)
            let wide = bytes.first == 1 ? 8 : 4
            guard fields.versionAndFlags() != nil, let id = fields.u32(), let scale = fields.u32(), scale > 0,
                let earliest = fields.uint(wide), let firstOffset = fields.uint(wide), fields.skip(2),
                let count = fields.uint(2), count * 12 <= UInt64(fields.remaining),
                let timescale = defaults[id]?.timescale, earliest <= UInt64(Int64.max / 4), firstOffset < UInt64(size),
                // A sidx in another timescale than its track's is taken for a lie (libavformat
                // then keeps the track's own: a sidx 3 times too fine made 30 s 10).
                scale == timescale
            else { return nil }
            // Times in the track's own timescale, as the tfra's and the moov's are.
            let inTrack = { (t: Int64) -> Int64 in Int64((Double(t) * Double(timescale) / Double(scale)).rounded()) }
            var (time, offset) = (Int64(earliest), box.end + Int64(firstOffset))
            var list: [RandomAccessPoint] = []
            for _ in 0..<count {
                guard let reference = fields.u32(), let duration = fields.u32(), let sap = fields.u32(),
                    reference & 0x8000_0000 == 0, sap & 0x8000_0000 != 0, offset < size
                else { return nil }
                list.append(RandomAccessPoint(time: inTrack(time), moof: offset, traf: 1, trun: 1, sample: 1))
                time += Int64(duration)
                offset += Int64(reference & 0x7FFF_FFFF)
            }
            let covered = try offset == size || mfraStart(size: size, source: source, reader: &reader) == offset
            guard covered else { return nil }
            points[id, default: []] += list
            tracks.append(
                Track(
                    id: id, timescale: timescale, end: inTrack(time), lastSamples: 0, lastDuration: 0,
                    start: inTrack(Int64(earliest))))
        }
        guard !tracks.isEmpty else { return nil }
        return FragmentTimeline(
            tracks: tracks.sorted { $0.id < $1.id }, foundThrough: .sidx, randomAccess: points,
            reordered: reordered, defaults: defaults)
    }

    /// Where an `mfra` that ends the file starts, from the `mfro` in its last 16 bytes.
    private static func mfraStart(size: Int64, source: any MediaSource, reader: inout LocalBoxReader) throws -> Int64? {
        guard size >= 16 else { return nil }
        if !source.isLocal(size - 16..<size) { try source.prefetch(size - 16..<size) }
        guard let tail = reader.bytes(at: size - 16, count: 16) else { return nil }
        var mfro = FieldReader(tail)
        guard mfro.u32() == 16, mfro.uint(4) == 0x6D66_726F /* mfro */, mfro.skip(4),
            let mfraSize = mfro.u32().map(Int64.init),
            mfraSize > 16, mfraSize <= size
        else { return nil }
        return size - mfraSize
    }

    /// The sync samples the `mfra` lists, by track; empty when the file has no usable `mfra`.
    private static func randomAccessPoints(
        size: Int64, source: any MediaSource,
        reader: inout LocalBoxReader
    ) throws -> [UInt32: [RandomAccessPoint]] {
        guard let start = try mfraStart(size: size, source: source, reader: &reader), size - start <= maximumBox else {
            return [:]
        }
        if !source.isLocal(start..<size) { try source.prefetch(start..<size) }
        guard let mfra = try StatedBox.readIfWellFormed(from: source, at: start), mfra.type == "mfra",
            mfra.size == size - start
        else { return [:] }
        var points: [UInt32: [RandomAccessPoint]] = [:]
        for (box, body) in reader.children(of: start + Int64(mfra.headerSize)..<size) where box.type == "tfra" {
            guard let bytes = reader.bytes(at: body.lowerBound, count: body.count) else { continue }
            var fields = FieldReader(bytes)
            guard let (version, _) = fields.versionAndFlags(), let track = fields.u32(), let lengths = fields.u32(),
                let count = fields.u32()
            else { continue }
            let wide = version == 1 ? 8 : 4
            let (trafWidth, trunWidth, sampleWidth) = (
                Int((lengths >> 4) & 3) + 1, Int((lengths >> 2) & 3) + 1, Int(lengths & 3) + 1
            )
            guard Int64(count) * Int64(2 * wide + trafWidth + trunWidth + sampleWidth) <= Int64(fields.remaining) else {
                continue
            }
            var list: [RandomAccessPoint] = []
            for _ in 0..<count {
                guard let time = fields.uint(wide), let offset = fields.uint(wide), let traf = fields.uint(trafWidth),
                    let trun = fields.uint(trunWidth), let sample = fields.uint(sampleWidth)
                else { break }
                guard offset < UInt64(size), time <= UInt64(Int64.max / 2) else { continue }
                list.append(
                    RandomAccessPoint(
                        time: Int64(time), moof: Int64(offset), traf: UInt32(traf),
                        trun: UInt32(trun), sample: UInt32(sample)))
            }
            points[track, default: []] += list
        }
        return points
    }

    /// A `trun` of `moof` lists composition time offsets (flag 0x800); true when it cannot be read.
    private static func hasCompositionOffsets(_ moof: BoxHeader, reader: inout LocalBoxReader) -> Bool {
        let trafs = reader.children(of: moof.offset + Int64(moof.headerSize)..<moof.end).filter {
            $0.box.type == "traf"
        }
        guard !trafs.isEmpty else { return true }
        for traf in trafs {
            for (run, body) in reader.children(of: traf.body) where run.type == "trun" {
                guard let head = reader.bytes(at: body.lowerBound, count: 4) else { return true }
                if head[2] & 0x08 != 0 { return true }  // version, then 24 bits of flags: 0x000800
            }
        }
        return false
    }

    /// What is read around where the first fragment's size places the last `moof`: with the first
    /// request's 64 KiB and an `mfra` guess of some 20 KiB, a probe reads no more than 256 KiB
    /// past the header. (Fragments of a steady recording differ by less than a tenth.)
    static let lastMoofWindow: Int64 = 160 << 10

    /// The window a `fragment` before the end of a file of `size`: a quarter of it before, three
    /// after (a first fragment tends to be the largest, a last one is often cut short).
    private static func lastMoofWindow(before size: Int64, fragment: Int64, from start: Int64) -> Range<Int64> {
        let near = max(start, size - fragment)
        return max(start, near - lastMoofWindow / 4)..<min(size, near + lastMoofWindow * 3 / 4)
    }

    /// A search for the last `moof`: how many box headers past the local bytes it may still read
    /// (4 KiB each, which holds a `moof`), and the distance between the `moof` boxes of a chain
    /// that ran out of them — what a fragment there measures.
    package struct MoofSearch {
        var reads: Int
        var step: Int64?
    }

    /// The last `moof` of the file, found in the local bytes of `range`: the last one on a chain of
    /// whole top-level boxes that starts at a `moof` (with its `mfhd` first) in them and ends
    /// exactly at the end of the file (or in an `mdat` the end cuts). Bytes of media data that
    /// happen to read "moof" do not start such a chain; a real `moof` that is not the last one
    /// leads to the last one.
    private static func chainedLastMoof(
        in range: Range<Int64>, size: Int64, source: any MediaSource,
        search: inout MoofSearch
    ) throws -> Int64? {
        let bytes = try source.bytes(at: range.lowerBound, count: Int(range.count))
        let moof = Array("moof".utf8), mfhd = Array("mfhd".utf8)
        // The earliest first: a real moof's chain steps over "moof" bytes in the media data after it.
        var p = 0
        while p + 16 <= bytes.count {
            if bytes[p + 4..<p + 8].elementsEqual(moof), bytes[p + 12..<p + 16].elementsEqual(mfhd),
                let last = try lastMoofOfChain(
                    from: range.lowerBound + Int64(p), size: size, source: source, search: &search)
            {
                return last
            }
            p += 1
        }
        return nil
    }

    private static func lastMoofOfChain(
        from offset: Int64, size: Int64, source: any MediaSource,
        search: inout MoofSearch
    ) throws -> Int64? {
        var offset = offset
        var last: Int64?
        for _ in 0..<BoxWalker.maxBoxes {
            if offset == size { return last }
            if !source.isLocal(offset..<min(size, offset + 16)) {
                guard search.reads > 0 else {
                    // From the last moof to here, where the next box starts: a fragment.
                    if let last { search.step = max(search.step ?? 0, offset - last) }
                    return nil
                }
                search.reads -= 1
                try source.prefetch(offset..<min(size, offset + (4 << 10)))
            }
            guard let box = try StatedBox.readIfWellFormed(from: source, at: offset),
                BoxWalker.topLevelTypes.contains(box.type)
            else { return nil }
            if box.type == "moof" { last = offset }
            guard let boxSize = box.size else { return last }  // size 0: to the end of the file
            // An mdat the end cuts (an upload that stopped) ends the chain, as it ends the file.
            guard boxSize <= size - offset else { return box.type == "mdat" ? last : nil }
            offset += boxSize
        }
        return nil
    }

    /// The end of each track fragment of the `moof` at `offset`, by track ID; nil when the box is
    /// not a readable `moof` or a fragment lacks its decode time.
    private static func ends(
        ofMoofAt offset: Int64, size: Int64, guess: Int64, defaults: [UInt32: TrackDefaults],
        source: any MediaSource, reader: inout LocalBoxReader
    ) throws -> [UInt32: Run]? {
        if !source.isLocal(offset..<min(size, offset + 16)) {
            try source.prefetch(offset..<min(size, offset + max(4 << 10, guess)))
        }
        guard let moof = try StatedBox.readIfWellFormed(from: source, at: offset), moof.type == "moof",
            let moofSize = moof.size, moofSize <= min(size - offset, maximumBox)
        else { return nil }
        if !source.isLocal(offset..<offset + moofSize) { try source.prefetch(offset..<offset + moofSize) }
        var ends: [UInt32: Run] = [:]
        for (traf, body) in reader.children(of: offset + Int64(moof.headerSize)..<offset + moofSize)
        where traf.type == "traf" {
            guard let (id, run) = fragmentEnd(body, defaults: defaults, reader: &reader) else { return nil }
            let before = ends[id] ?? Run(end: run.end, samples: 0, duration: 0)
            guard let duration = add(before.duration, 1, times: run.duration) else { return nil }
            ends[id] = Run(end: max(before.end, run.end), samples: before.samples + run.samples, duration: duration)
        }
        return ends.isEmpty ? nil : ends
    }

    /// Track ID, end time and samples of one `traf`.
    private static func fragmentEnd(
        _ traf: Range<Int64>, defaults: [UInt32: TrackDefaults],
        reader: inout LocalBoxReader
    ) -> (UInt32, Run)? {
        var id: UInt32?
        var defaultDuration: UInt32?
        var start: Int64?
        var total: Int64 = 0
        var samples: Int64 = 0
        for (box, body) in reader.children(of: traf) {
            guard ["tfhd", "tfdt", "trun", "uuid"].contains(box.type),
                var bytes = reader.bytes(at: body.lowerBound, count: body.count)
            else { continue }
            if box.type == "uuid" {
                // Smooth Streaming's tfxd, in place of a tfdt (ISMV): the fragment's absolute time.
                guard bytes.starts(with: tfxd), start == nil else { continue }
                bytes.removeFirst(tfxd.count)
            }
            var fields = FieldReader(bytes)
            guard let (version, flags) = fields.versionAndFlags() else { return nil }
            switch box.type {
            case "tfhd":
                guard let track = fields.u32() else { return nil }
                id = track
                defaultDuration = defaults[track]?.sampleDuration
                if flags & 0x01 != 0 { guard fields.skip(8) else { return nil } }  // base data offset
                if flags & 0x02 != 0 { guard fields.skip(4) else { return nil } }  // sample description
                if flags & 0x08 != 0 { defaultDuration = fields.u32() }
            case "tfdt", "uuid":
                guard let time = fields.uint(version == 1 ? 8 : 4), time <= UInt64(Int64.max / 2) else { return nil }
                start = Int64(time)
            default:  // trun
                guard let count = fields.u32() else { return nil }
                samples += Int64(count)
                if flags & 0x01 != 0 { guard fields.skip(4) else { return nil } }  // data offset
                if flags & 0x04 != 0 { guard fields.skip(4) else { return nil } }  // first sample's flags
                guard flags & 0x100 != 0 else {
                    // Without durations listed, nothing bounds the count by the box's size.
                    guard let defaultDuration, let sum = add(total, Int64(count), times: Int64(defaultDuration)) else {
                        return nil
                    }
                    total = sum
                    continue
                }
                let others = [0x200, 0x400, 0x800].filter { flags & $0 != 0 }.count * 4
                guard Int64(count) * Int64(4 + others) <= Int64(fields.remaining) else { return nil }
                for _ in 0..<count {
                    guard let duration = fields.u32(), fields.skip(others),
                        let sum = add(total, 1, times: Int64(duration))
                    else { return nil }
                    total = sum
                }
            }
        }
        guard let id, let start, let end = add(start, 1, times: total) else { return nil }
        return (id, Run(end: end, samples: samples, duration: total))
    }

    /// The extended type of Smooth Streaming's TfxdBox.
    private static let tfxd: [UInt8] = [
        0x6D, 0x1D, 0x9B, 0x05, 0x42, 0xD5, 0x44, 0xE6, 0x80, 0xE2, 0x14, 0x1D, 0xAF, 0xF7, 0x57, 0xB2,
    ]

    /// `base + count × each`, nil when a hostile file makes it overflow.
    private static func add(_ base: Int64, _ count: Int64, times each: Int64) -> Int64? {
        let (product, overflow) = count.multipliedReportingOverflow(by: each)
        let (sum, overflowed) = base.addingReportingOverflow(product)
        return overflow || overflowed ? nil : sum
    }
}

/// What the moov says of each track that fragments rely on: its timescale and the default sample
/// duration, size and flags of its `trex`.
package struct TrackDefaults: Sendable, Equatable {
    package var timescale: UInt32
    package var sampleDuration: UInt32?
    var sampleSize: UInt32?
    /// The `trex` sample flags: what a fragment that lists none says of its samples (sync or not).
    var sampleFlags: UInt32?

    /// By track ID; tracks without a readable `tkhd` and `mdhd` are left out.
    static func read(moov: BoxHeader, reader: inout LocalBoxReader) -> [UInt32: TrackDefaults] {
        var tracks: [UInt32: TrackDefaults] = [:]
        var durations: [UInt32: (duration: UInt32, size: UInt32, flags: UInt32?)] = [:]
        for (box, body) in reader.children(of: moov.offset + Int64(moov.headerSize)..<moov.end) {
            if box.type == "trak", let (id, timescale) = idAndTimescale(trak: body, reader: &reader) {
                tracks[id] = TrackDefaults(timescale: timescale)
            } else if box.type == "mvex" {
                for (trex, body) in reader.children(of: body) where trex.type == "trex" {
                    guard let bytes = reader.bytes(at: body.lowerBound, count: min(body.count, 24)) else { continue }
                    var fields = FieldReader(bytes)
                    guard fields.skip(4), let id = fields.u32(), fields.skip(4), let duration = fields.u32(),
                        let size = fields.u32()
                    else { continue }
                    durations[id] = (duration, size, fields.u32())
                }
            }
        }
        for (id, trex) in durations {
            tracks[id]?.sampleDuration = trex.duration
            tracks[id]?.sampleSize = trex.size
            tracks[id]?.sampleFlags = trex.flags
        }
        return tracks
    }

    private static func idAndTimescale(trak: Range<Int64>, reader: inout LocalBoxReader) -> (UInt32, UInt32)? {
        var id: UInt32?
        var timescale: UInt32?
        for (box, body) in reader.children(of: trak) {
            if box.type == "tkhd", let bytes = reader.bytes(at: body.lowerBound, count: min(body.count, 24)) {
                var fields = FieldReader(bytes)
                guard let (version, _) = fields.versionAndFlags(), fields.skip(version == 1 ? 16 : 8) else { continue }
                id = fields.u32()
            } else if box.type == "mdia" {
                for (mdhd, body) in reader.children(of: body) where mdhd.type == "mdhd" {
                    guard let bytes = reader.bytes(at: body.lowerBound, count: min(body.count, 24)) else { continue }
                    var fields = FieldReader(bytes)
                    guard let (version, _) = fields.versionAndFlags(), fields.skip(version == 1 ? 16 : 8) else {
                        continue
                    }
                    timescale = fields.u32()
                }
            }
        }
        guard let id, let timescale, timescale > 0 else { return nil }
        return (id, timescale)
    }
}
