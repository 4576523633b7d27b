import ByteSources
import RangeFetch
import Support

/// The key frames of a Matroska file without Cues (a recorder's WebM), found where they are
/// instead of by reading every Cluster before them — libavformat's only way to seek in such a
/// file, which made ten thumbnails of a 10-minute recording read 150 MB of its 160.
///
/// For each time: a read placed where the Clusters seen so far (and the file's two ends) put that
/// time, ending a little after it; its Clusters (`MatroskaClusters`) are followed from the first
/// one found. When they reach past the time, the last video key frame at or before it among them
/// is the one (the bytes between are all read, so none is missed); when none is, the read grows
/// backwards; when the time lies outside them, the read grows towards it, or is placed again with
/// what they told when the time is far. Cluster times that go back end the search. Each time takes
/// a bounded number of reads; a time not found makes the whole answer nil (a partial index would
/// make libavformat's seeks land on the wrong key frames).
package struct MatroskaKeyFrames {
    let source: any MediaSource
    let size: Int64
    /// The Matroska track number of the video, and of every track (a block of another number is
    /// taken as a false Cluster).
    let track: Int64
    let tracks: Set<Int64>
    /// Where the first Cluster starts and its timecode; the timecode the last block reaches.
    let first: (position: Int64, timecode: Int64)
    let lastTimecode: Int64
    /// The bytes a read takes, then sized to what finding a key frame took.
    private(set) var window: Int64 = 512 << 10
    private var sized = false
    static let largestWindow: Int64 = 8 << 20, smallestWindow: Int64 = 256 << 10
    static let readsPerTime = 8

    /// A key frame: its block, the Cluster it is in (where a seek must land) and its timecode.
    package struct KeyFrame: Equatable {
        let block: Range<Int64>
        let cluster: Int64
        let timecode: Int64
    }

    /// (position, timecode) of every Cluster seen, with the file's ends: where the next read goes.
    private var points: [(position: Int64, timecode: Int64)] = []
    /// Every video key frame seen, by block position.
    private(set) var seen: [Int64: KeyFrame] = [:]
    /// The stretches read whole so far: a later time they cover needs no read.
    private var covered: [Run] = []

    init(
        source: any MediaSource, size: Int64, track: Int64, tracks: Set<Int64>,
        first: (position: Int64, timecode: Int64),
        lastTimecode: Int64
    ) {
        self.source = source
        self.size = size
        self.track = track
        self.tracks = tracks
        self.first = first
        self.lastTimecode = lastTimecode
        points = [first, (size, max(lastTimecode, first.timecode))]
    }

    /// The key frame at or before each timecode (the first one, for a timecode before it), or nil
    /// when one of them could not be found.
    ///
    /// The first time is searched alone, and the read is then sized to what it took (a group of
    /// pictures, with room); the first reads for the others go out together, in parallel.
    mutating func keyFrames(at timecodes: [Int64], connections: Int, cancellation: Cancellation) throws -> [KeyFrame]? {
        var found: [Int64: KeyFrame] = [:]
        let wanted = Set(timecodes).sorted()
        var waved: [Int64: Range<Int64>]?
        for (i, timecode) in wanted.enumerated() {
            if cancellation.isCancelled { throw MediaError.interrupted }
            guard let key = try keyFrame(at: timecode, firstRead: waved?[timecode]) else { return nil }
            found[timecode] = key
            // Once a search has sized the reads, the others' first reads go out together (and are
            // their first reads, though later searches place better: they are here).
            if waved == nil, sized {
                let reads = Dictionary(uniqueKeysWithValues: wanted[(i + 1)...].map { ($0, placed($0, after: nil)) })
                waved = reads
                var prefetcher = Prefetcher()
                prefetcher.connections = connections
                let wave = reads.values.sorted { $0.lowerBound < $1.lowerBound }.flatMap {
                    source.missingRanges(in: $0)
                }
                try prefetcher.fetch(Prefetcher.merge(wave, gap: 0), source: source, cancellation: cancellation)
            }
        }
        return timecodes.map { found[$0]! }
    }

    private mutating func keyFrame(at timecode: Int64, firstRead: Range<Int64>?) throws -> KeyFrame? {
        if let known = covered.lazy.compactMap({ $0.answer(timecode) }).first { return known }
        var run = firstRead ?? placed(timecode, after: nil)
        for _ in 0..<MatroskaKeyFrames.readsPerTime {
            try source.prefetch(run)
            let bytes = try source.bytes(at: run.lowerBound, count: Int(run.count))
            let clusters = MatroskaClusters.clusters(in: bytes).filter {
                $0.blocks.allSatisfy { tracks.contains($0.track) }
            }
            // Cluster times that go back, here or against the Clusters seen before and after,
            // make the bytes between them say nothing: libavformat's way.
            guard consistent(clusters, at: run.lowerBound) else { return nil }
            note(clusters, at: run.lowerBound)
            let startsAtFirst = run.lowerBound <= first.position
            guard let earliest = clusters.first else {
                run = earlier(run)  // a Cluster larger than the read
                continue
            }
            if earliest.timecode > timecode, !startsAtFirst {
                // All after the time: the bytes before, or a new read when the time is far from here.
                let again = placed(timecode, after: nil)
                run = again.upperBound < run.lowerBound - window ? again : earlier(run)
                continue
            }
            let blocks = clusters.flatMap(\.blocks)
            if !blocks.contains(where: { $0.timecode > timecode }) && run.upperBound < size {
                // All before the time: the bytes after, or a new read when the time is far from here.
                let again = placed(timecode, after: run)
                run = again.lowerBound > run.upperBound + window ? again : later(run)
                continue
            }
            var keys: [KeyFrame] = []
            for cluster in clusters {
                for block in cluster.blocks where block.track == track && block.keyframe {
                    let start = run.lowerBound + Int64(block.position)
                    let key = KeyFrame(
                        block: start..<start + Int64(block.size), cluster: run.lowerBound + Int64(cluster.position),
                        timecode: block.timecode)
                    keys.append(key)
                    seen[start] = key
                }
            }
            covered.append(
                Run(
                    from: startsAtFirst ? Int64.min : earliest.timecode,
                    to: blocks.map(\.timecode).max() ?? earliest.timecode,
                    keys: keys))
            if let key = keys.last(where: { $0.timecode <= timecode }) {
                // The first search away from the start sizes the reads: from the key frame's Cluster
                // to the first block past the time, and half again for where a guess falls.
                if !sized, key.cluster > first.position, let past = blocks.first(where: { $0.timecode > timecode }) {
                    sized = true
                    let needed = run.lowerBound + Int64(past.position) - key.cluster
                    window = min(MatroskaKeyFrames.largestWindow, max(MatroskaKeyFrames.smallestWindow, needed * 3 / 2))
                }
                return key
            }
            if startsAtFirst {
                // Before the first key frame (video that starts after the audio): the first one.
                if let key = keys.first { return key }
                run = later(run)
                continue
            }
            run = earlier(run)
        }
        return nil
    }

    /// A contiguous stretch read whole: its key frames are all those between its first Cluster's
    /// time (from the file's start, for a stretch that starts there) and its last block's.
    private struct Run {
        let from: Int64
        let to: Int64
        let keys: [KeyFrame]

        /// The key frame at or before `timecode`, when this stretch alone says which it is.
        func answer(_ timecode: Int64) -> KeyFrame? {
            guard from <= timecode, timecode < to else { return nil }
            return keys.last { $0.timecode <= timecode } ?? (from == Int64.min ? keys.first : nil)
        }
    }

    /// A read ending a little after where the Clusters seen put `timecode`; past the end of
    /// `previous`, a read that ended before it.
    private func placed(_ timecode: Int64, after previous: Range<Int64>?) -> Range<Int64> {
        let below = points.last { $0.timecode <= timecode } ?? points[0]
        let above = points.first { $0.position > below.position && $0.timecode > timecode } ?? points[points.count - 1]
        var guess = below.position
        if above.timecode > below.timecode {
            let share = Double(timecode - below.timecode) / Double(above.timecode - below.timecode)
            guess += Int64(share * Double(above.position - below.position))
        }
        var end = min(size, max(guess + window / 6, first.position + window))
        if let previous, end <= previous.upperBound { end = min(size, previous.upperBound + window * 5 / 6) }
        return max(first.position, end - window)..<end
    }

    /// The read with `window` more before it.
    private func earlier(_ reading: Range<Int64>) -> Range<Int64> {
        max(first.position, reading.lowerBound - window)..<reading.upperBound
    }

    /// The read with `window` more after it.
    private func later(_ reading: Range<Int64>) -> Range<Int64> {
        reading.lowerBound..<min(size, reading.upperBound + window)
    }

    /// The Clusters' times do not go back, among themselves nor against those seen before.
    private func consistent(_ clusters: [MatroskaClusters.Cluster], at base: Int64) -> Bool {
        guard let head = clusters.first, let tail = clusters.last else { return true }
        let before = points.last { $0.position < base + Int64(head.position) }
        let after = points.first { $0.position > base + Int64(tail.position) }
        return zip(clusters, clusters.dropFirst()).allSatisfy { $0.timecode <= $1.timecode }
            && before.map { $0.timecode <= head.timecode } ?? true && after.map { $0.timecode >= tail.timecode } ?? true
    }

    private mutating func note(_ clusters: [MatroskaClusters.Cluster], at base: Int64) {
        guard !clusters.isEmpty else { return }
        points.append(contentsOf: clusters.map { (base + Int64($0.position), $0.timecode) })
        points.sort { $0.position < $1.position }
    }
}

extension MatroskaKeyFrames {
    /// For a Matroska file without Cues (or whose Cues `fromCues` could not choose by): the key
    /// frames of `track` at or before `times` (timestamps by `clock`) and every other one seen on
    /// the way, sorted, each with where its Cluster starts, for the demuxer's index: a seek to its
    /// timestamp then lands on its Cluster. Nil when a time could not be found within its reads.
    public static func index(
        head: MatroskaHead, track: Int64, clock: StreamClock, source: any MediaSource, times: [Double],
        end: Double, connections: Int, cancellation: Cancellation
    ) throws -> [(entry: IndexEntry, cluster: FoundKeyFrame)]? {
        guard head.cues != nil, let start = head.firstCluster, let size = try source.size() else { return nil }
        let numbers = head.tracks
        try source.prefetch(start..<min(size, start + 64))
        let opening = try source.bytes(at: start, count: Int(min(64, size - start)))
        guard let cluster = MatroskaClusters.cluster(in: opening, at: 0, whole: false) else { return nil }
        var finder = MatroskaKeyFrames(
            source: source, size: size, track: track, tracks: Set(numbers),
            first: (start, cluster.timecode), lastTimecode: clock.timestamp(end))
        guard
            try finder.keyFrames(at: times.map(clock.timestamp), connections: connections, cancellation: cancellation)
                != nil
        else {
            return nil
        }
        return finder.seen.values.sorted { $0.timecode < $1.timecode }.map { key in
            let time = clock.seconds(key.timecode)
            return (
                IndexEntry(
                    position: key.block.lowerBound, size: Int64(key.block.count), time: time, timestamp: key.timecode,
                    decodeTime: time, isKeyframe: true),
                FoundKeyFrame(position: key.cluster, timestamp: key.timecode)
            )
        }
    }
}
