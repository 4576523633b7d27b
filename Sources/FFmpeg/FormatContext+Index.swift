import ByteSources
import CFFmpeg
import RangeFetch

extension FormatContext {
    /// The index entries of stream `index`, sorted by time: for MP4 the whole sample table from the
    /// moov; for other containers whatever the demuxer has built so far (often nothing).
    /// The corresponding FFmpeg functions are `avformat_index_get_entries_count` and `avformat_index_get_entry`.
    public func indexEntries(stream index: Int) -> [IndexEntry] { entries(stream: index, sized: true) }

    /// The points the index knows by position only, with size 0: Matroska's Cues (each the cluster
    /// a key frame starts), an MP3's Xing table of contents (each hundredth of the duration).
    package func positionedPoints(stream index: Int) -> [IndexEntry] {
        entries(stream: index, sized: false).filter(\.isKeyframe)
    }

    /// Tells the demuxer that stream `index` has a key frame at `timestamp` in the element at
    /// `position` (a Matroska Cluster): its seeks land there, as on a Cue point.
    /// The corresponding FFmpeg function is `av_add_index_entry`.
    package func addKeyFrame(stream index: Int, position: Int64, timestamp: Int64) {
        guard let st = stream(index) else { return }
        _ = ff.av_add_index_entry(st, position, timestamp, 0, 0, AVINDEX_KEYFRAME)
    }

    private func entries(stream index: Int, sized: Bool) -> [IndexEntry] {
        guard let st = stream(index) else { return [] }
        let tb = st.pointee.time_base
        let scale = Double(tb.num) / Double(max(1, tb.den))
        let count = ff.avformat_index_get_entries_count(st)
        let delay = decodeDelay(stream: index)
        var entries: [IndexEntry] = []
        entries.reserveCapacity(Int(max(0, count)))
        for i in 0..<max(0, count) {
            guard let e = ff.avformat_index_get_entry(st, i), e.pointee.pos >= 0, (mp_index_entry_size(e) > 0) == sized
            else { continue }
            // A damaged moov can place a sample past any file (offsets near 2^63) or at a time that
            // overflows: such a sample cannot be fetched or seeked to, so it is left out.
            let size = Int64(mp_index_entry_size(e))
            let (timestamp, overflow) = e.pointee.timestamp.addingReportingOverflow(delay)
            guard e.pointee.pos <= ResponseInfo.maxResourceSize - size, !overflow else { continue }
            entries.append(
                IndexEntry(
                    position: e.pointee.pos, size: size,
                    time: Double(timestamp) * scale, timestamp: timestamp,
                    decodeTime: Double(e.pointee.timestamp) * scale,
                    isKeyframe: mp_index_entry_is_keyframe(e) != 0))
        }
        return entries.sorted { $0.time < $1.time }
    }

    /// How many entries the index of stream `index` has, without reading them.
    package func indexEntryCount(stream index: Int) -> Int {
        stream(index).map { Int(max(0, ff.avformat_index_get_entries_count($0))) } ?? 0
    }

    /// How far the index's DTS run ahead of presentation times in stream `index`, in its time base:
    /// the stream's start time (first PTS) minus its first DTS; 0 without an index.
    package func decodeDelay(stream index: Int) -> Int64 {
        guard let st = stream(index), ff.avformat_index_get_entries_count(st) > 0,
            let first = ff.avformat_index_get_entry(st, 0), st.pointee.start_time != mp_av_nopts_value()
        else { return 0 }
        let (delay, overflow) = st.pointee.start_time.subtractingReportingOverflow(first.pointee.timestamp)
        return overflow ? 0 : max(0, delay)  // times near ±2^63 come only from damaged files
    }

    /// Whether the stream's first presentation time is known (from its header or first packets).
    package func knowsStartTime(stream index: Int) -> Bool {
        stream(index).map { $0.pointee.start_time != mp_av_nopts_value() } ?? false
    }

    /// Sets stream `index`'s start time to its first packet's presentation time, for a context
    /// opened without stream info: its decode delay then places the index's times. The demuxer's
    /// position moves; the next seek sets it.
    package func learnStartTime(stream index: Int) throws {
        guard let st = stream(index), st.pointee.start_time == mp_av_nopts_value() else { return }
        let packet = try Packet()
        for _ in 0..<256 {
            guard try readPacket(into: packet) else { return }
            if packet.streamIndex == index {
                if let pts = packet.pts { st.pointee.start_time = pts }
                return
            }
        }
    }

    /// Start of the presentation in seconds (0 when the container does not say).
    public var startTime: Double {
        let t = pointer.pointee.start_time
        return t == mp_av_nopts_value() ? 0 : Double(t) / Double(AV_TIME_BASE)
    }

    public var durationSeconds: Double? {
        let d = pointer.pointee.duration
        return d == mp_av_nopts_value() || d <= 0 ? nil : Double(d) / Double(AV_TIME_BASE)
    }

    public var bitRate: Int64? { pointer.pointee.bit_rate > 0 ? pointer.pointee.bit_rate : nil }

    /// Sets the duration found outside libavformat, and the bit rate it gives a file of `bytes`, as
    /// libavformat sets them from a duration of its own.
    package func setDuration(seconds: Double, bytes: Int64) {
        let duration = Int64(exactly: (seconds * Double(AV_TIME_BASE)).rounded()) ?? 0
        guard duration > 0 else { return }
        pointer.pointee.duration = duration
        pointer.pointee.bit_rate =
            Int64(exactly: (Double(bytes) * 8 * Double(AV_TIME_BASE) / Double(duration)).rounded(.down)) ?? 0
    }

    /// The stream libavformat would pick for `kind` (the default track), if any.
    /// The corresponding FFmpeg function is `av_find_best_stream`.
    public func bestStream(_ kind: TrackInfo.Kind) -> Int? {
        let type: AVMediaType
        switch kind {
        case .video: type = AVMEDIA_TYPE_VIDEO
        case .audio: type = AVMEDIA_TYPE_AUDIO
        case .subtitle: type = AVMEDIA_TYPE_SUBTITLE
        default: return nil
        }
        let index = ff.av_find_best_stream(pointer, type, -1, -1, nil, 0)
        return index >= 0 ? Int(index) : nil
    }

    /// A picture stored with the media (cover art), not a track with a timeline.
    package func isAttachedPicture(stream index: Int) -> Bool {
        guard let st = stream(index) else { return false }
        return st.pointee.disposition & AV_DISPOSITION_ATTACHED_PIC != 0
    }

    public func kind(ofStream index: Int) -> TrackInfo.Kind {
        guard let st = stream(index) else { return .unknown }
        return TrackInfo.Kind(st.pointee.codecpar.pointee.codec_type)
    }
}

extension TrackInfo.Kind {
    /// The one mapping from libavutil's media types to the kinds probe, `--tracks` and plans show.
    init(_ type: AVMediaType) {
        switch type {
        case AVMEDIA_TYPE_VIDEO: self = .video
        case AVMEDIA_TYPE_AUDIO: self = .audio
        case AVMEDIA_TYPE_SUBTITLE: self = .subtitle
        case AVMEDIA_TYPE_DATA: self = .data
        case AVMEDIA_TYPE_ATTACHMENT: self = .attachment
        default: self = .unknown
        }
    }
}
