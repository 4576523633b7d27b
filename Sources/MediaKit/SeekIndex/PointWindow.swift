import ByteSources
import Containers
import FFmpeg
import Foundation

/// A window placed by seek points that give positions but not sample sizes (fragments, Cue
/// points, a table of contents): from the point at or before the start (where decoding starts) to
/// the first point at or after the end, plus the head of what follows (the demuxer reads into it
/// to learn that the window has ended).
struct PointWindow {
    let range: Range<Int64>
    /// Where the next point's bytes start (or the end of the file).
    let stop: Int64
    /// What placed it, for the plan's note.
    let why: String
    /// The points' times, from the container's start.
    let first: Double
    let last: Double?
    /// The window ends a little short of where its end falls between two points, and the
    /// prefetch walks the frames from its start to the real end (an MP3's: `MPEGAudioFrames`).
    var walksFrames = false

    /// The window between `points` (time and position, as the container counts) around [from, to)
    /// in a file of `size` bytes; nil when the first point lies past the file.
    ///
    /// With `proportional` points (an MP3's table of contents: bytes spread evenly enough between
    /// them), the window is planned to a little short of where the end falls between the points
    /// around it, not to the next one (a hundredth of the duration is 6 s of a 10-minute file), and
    /// the prefetch walks the frames to the real end (`MPEGAudioFrames`).
    init?(
        _ points: [(time: Double, position: Int64)], from: Double, to: Double, size: Int64,
        startTime: Double, placedBy: String, proportional: Bool = false
    ) {
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
        let following = proportional ? 0 : PointWindow.followingHead(end - first.position)
        let before = proportional ? MPEGAudioFrames.seekSearch : 0
        self.init(
            range: max(0, first.position - before)..<min(size, end + following), stop: stop, why: why,
            first: firstTime, last: nextTime, walksFrames: proportional)
    }

    init(range: Range<Int64>, stop: Int64, why: String, first: Double, last: Double?, walksFrames: Bool = false) {
        (self.range, self.stop, self.why, self.first, self.last) = (range, stop, why, first, last)
        self.walksFrames = walksFrames
    }

    /// The same window, its note led by `prefix` (what kind of file placed it).
    func noted(_ prefix: String) -> PointWindow {
        PointWindow(range: range, stop: stop, why: prefix + why, first: first, last: last, walksFrames: walksFrames)
    }

    /// What is taken of the bytes after a window, where the demuxer reads the first sample past
    /// its end: a fiftieth of the window (a key frame of a 10 s 720p window, a few frames of an
    /// MP3's), between 4 and 64 KiB; the prefetch's reading of the window fetches any more it needs.
    static func followingHead(_ window: Int64) -> Int64 { min(PrefetchPlanner.mergeGap, max(4 << 10, window / 50)) }

    /// The points libavformat's index holds by position for the first of `streams` that has any,
    /// after a seek to the start: a Matroska file's Cues are read on its first seek (until then
    /// its index holds the key frames it has met), which those key frames already cover — a seek
    /// further into a file without Cues would read its way there cluster by cluster. Nil when the
    /// seek fails or no stream has points.
    static func libavformatPoints(_ context: FormatContext, streams: [Int]) -> [IndexEntry]? {
        do { try context.seek(seconds: context.startTime) } catch { return nil }
        return streams.lazy.map({ context.positionedPoints(stream: $0) }).first(where: { !$0.isEmpty })
    }

    /// `points` for a window: a seek compares its target with the points' own timestamps, not
    /// shifted by a decode delay (an MP3's start time, its encoder's delay, is no such delay: 23 ms
    /// placed the window a whole point, 6 s of a 10-minute file, before where the player's seek lands).
    static func seekTimes(_ points: [IndexEntry]) -> [(time: Double, position: Int64)] {
        points.map { (time: $0.decodeTime, position: $0.position) }
    }
}
