import ByteSources
import Containers
import FFmpeg

/// How a fragmented MP4 with many fragments (`MP4Layout.manyFragments`) is opened: its timeline
/// read in libavformat's place, or every `moof` fetched ahead of libavformat in small reads.
extension FragmentTimeline {
    /// The timeline that stands in for libavformat's walk of every `moof`, with `fragments` set to
    /// the mode that goes with it; nil when libavformat is to read them all after all (fetched
    /// ahead of it, in small reads, where that is the plan: `MoofChain`).
    static func prepare(
        _ layout: MP4Layout, fragments: inout FormatContext.Fragments, source: any MediaSource, session: MediaSession
    ) throws -> FragmentTimeline? {
        var timeline: FragmentTimeline?
        if fragments == .keyFrames {
            // Read once: an index's timeline serves `throughIndex` below as it is.
            timeline = layout.hasSegmentIndex ? nil : try FragmentTimeline.read(layout: layout, source: source)
            let scanned = timeline.map { $0.foundThrough == .tail && !$0.reordered } ?? false
            fragments = scanned ? .first : .throughIndex(oneStream: true)
        }
        switch fragments {
        case .every, .keyFrames:
            break
        case .everyChained:
            if let moof = layout.boxes.first(where: { $0.type == "moof" }) {
                try MoofChain(source: source, cancellation: session.cancellation, firstMoof: moof).prefetch(
                    from: moof.offset)
            }
        case .first:
            // A sidx's timeline is read from the head: libavformat would take the durations
            // from it too, but analyse the whole first fragment (0.5 MB of a 2 s 720p one) —
            // but for B-frames (the start is a presentation time libavformat finds in the
            // fragment) and a sidx for some tracks only (the others' durations are in theirs).
            timeline = try timeline ?? FragmentTimeline.read(layout: layout, source: source)
            if layout.hasSegmentIndex, let read = timeline,
                read.reordered || read.tracks.count < read.defaults.count
            {
                timeline = nil
            }
        case .throughIndex:
            // With a sidx it stops too, and its index then holds the first fragment only: the
            // sidx (or the mfra) places the others. B-frames make it read them all (see
            // FragmentTimeline.reordered).
            timeline = try timeline ?? FragmentTimeline.read(layout: layout, source: source, randomAccessOnly: true)
            let listed = timeline?.randomAccess.values.joined().map(\.moof) ?? []
            if timeline?.randomAccess.isEmpty != false || timeline?.reordered != false { timeline = nil }
            // libavformat will read every moof: they come first, in small reads (MoofChain).
            if timeline == nil, let moof = layout.boxes.first(where: { $0.type == "moof" }) {
                try MoofChain(source: source, cancellation: session.cancellation, firstMoof: moof)
                    .prefetch(from: moof.offset, known: listed)
            }
        }
        return timeline
    }
}
