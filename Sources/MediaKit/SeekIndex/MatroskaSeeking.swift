import ByteSources
import Containers
import FFmpeg

/// What the two Matroska indexes share: the head that says whether the file has Cues, how the
/// times are learnt, the duration from the tail, and the key frames found where the Clusters
/// place their times (`MatroskaKeyFrames.index`).
protocol MatroskaSeeking: SeekIndex {
    /// Nil for a head that could not be read here.
    var head: MatroskaHead? { get }
}

extension MatroskaSeeking {
    /// The start time from the first packets (its head held to 256 KiB, as while it was opened: a
    /// 720p key frame is most of 64 KiB). With Cues and a duration stated in its Info, only the
    /// start time is wanted, not libavformat's analysis of a second of packets, which read half
    /// a megabyte past the first request for ten thumbnails needing 0.27 MB.
    func learnTimes(of video: Int, timesGiven: Bool) throws {
        if head != nil { source.limitReadahead(to: OpenedInput.headRead) }
        defer { source.limitReadahead(to: nil) }
        let cued = head?.cues == true && context.durationSeconds != nil
        try context.findStreamInfo(bytes: cued ? FormatContext.firstPacketsBytes : nil)
    }

    func duration(of stream: Int) throws -> Double? {
        try statedDuration ?? context.duration(stream: stream) ?? MatroskaTail.duration(of: context, source: source)
    }

    /// The bit rate's estimate, for a window no point places.
    var bitRate: BitRateIndex {
        var index = BitRateIndex(context, source: source)
        index.noCues = head?.cues == false
        index.foundDuration = { [context, source] in try MatroskaTail.duration(of: context, source: source) }
        return index
    }

    /// The key frames at `query`'s times found where the Clusters place them — libavformat would
    /// read every Cluster up to each time, or land where Cues that do not place them say — each
    /// given to libavformat's index; nil when a time could not be found within its reads.
    func clusterKeyFrames(_ query: KeyFrameQuery) throws -> KeyFrames? {
        guard let duration = query.duration,
            let found = try MatroskaKeyFrames.index(
                context, head: head, stream: query.video, source: source,
                times: query.requested.map { query.offset + min(max(0, $0), duration) }, end: query.offset + duration,
                connections: query.connections, cancellation: query.cancellation)
        else { return nil }
        let why = head?.cues == true ? "Cues that do not place its key frames" : "no Cues"
        return KeyFrames(
            listed: found, at: query.times,
            notes: [
                "\(context.formatName) has \(why): each key frame was found by reading where the Clusters place its time"
            ])
    }
}
