import ByteSources
import RangeFetch
import Support

/// The `moof` boxes of a fragmented MP4 that libavformat will read one after the other (no
/// `mfra` or `sidx` to seek by, or B-frames: see `FragmentTimeline.reordered`), fetched ahead of
/// it by walking the chain of top-level boxes with small reads.
///
/// libavformat reads each `moof`, the `mdat` header after it, and seeks past the `mdat`. Left to
/// the read path, each of those seeks starts a readahead window (256 KiB) of which it uses a few
/// kilobytes: a 160 MB file of 300 fragments moved 78 MB to place a 3 MB window. Here each step
/// fetches one small range that holds the `moof` and the next header; libavformat then finds
/// them cached, and a short read of what is cached is all it asks for. The requests stay one per
/// fragment: without an index, where a fragment starts is known only from the one before it (with
/// an `mfra`, as for B-frames, they are fetched in parallel).
package struct MoofChain {
    let source: any MediaSource
    let cancellation: Cancellation
    /// Fetched at each fragment: twice the first `moof` (fragments are alike) and the header after
    /// it, at least 2 KiB.
    let step: Int64

    package init(source: any MediaSource, cancellation: Cancellation, firstMoof: BoxHeader) {
        self.source = source
        self.cancellation = cancellation
        step = max(2 << 10, 2 * firstMoof.size + 16)
    }

    /// Walks from the first `moof` to the end of the file or the first box that does not make
    /// sense (where libavformat stops too), fetching what is not cached. The `moof` boxes an `mfra`
    /// lists (`known`) are fetched first, in parallel: the walk then finds them cached.
    package func prefetch(from first: Int64, known: [Int64] = [], connections: Int = 4) throws {
        guard let size = try source.size() else { return }
        var prefetcher = Prefetcher()
        prefetcher.connections = connections
        try prefetcher.fetch(
            Set(known).sorted().filter { $0 >= 0 && $0 < size }.flatMap {
                source.missingRanges(in: $0..<min(size, $0 + step))
            },
            source: source, cancellation: cancellation)
        var at = first
        while at < size - 8 {
            if cancellation.isCancelled { throw MediaError.interrupted }
            // A box header; a step from it holds a moof and the mdat header after it, so the header
            // of the mdat that follows needs no request of its own.
            if !source.isLocal(at..<min(size, at + 16)) { try source.prefetch(at..<min(size, at + step)) }
            guard let box = try StatedBox.readIfWellFormed(from: source, at: at), let length = box.size,
                length <= size - at
            else { return }
            // A moof larger than the step, with the header that follows it.
            let moof = at..<min(size, at + length + 16)
            if box.type == "moof", !source.isLocal(moof) { try source.prefetch(moof) }
            at += length
        }
    }
}
