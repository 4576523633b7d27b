import CFFmpeg

/// A stream's clock as a parser outside libavformat needs it to give the stream a duration
/// (an MPEG-TS's tail: `TransportStreamTail`).
public struct StreamTiming: Sendable, Equatable {
    /// The container's ID of the stream: an MPEG-TS's PID, an MP4's track ID.
    public let id: Int32
    /// The first timestamp, in `timeBase`; nil when libavformat found none.
    public let start: Int64?
    public let timeBase: (num: Int32, den: Int32)
    /// One frame as libavformat gives the last packet its duration, in seconds as a fraction: a
    /// video frame at the stream's frame rate, an audio frame's samples (the decoder's frame size
    /// or the codec's fixed one, AC-3's 1536) over the sample rate; (0, 0) for subtitles and data.
    public let frame: (num: Int64, den: Int64)
    public let kind: TrackInfo.Kind

    public static func == (a: StreamTiming, b: StreamTiming) -> Bool {
        a.id == b.id && a.start == b.start && a.timeBase == b.timeBase && a.frame == b.frame && a.kind == b.kind
    }
}

extension FormatContext {
    public func timing(ofStream index: Int) -> StreamTiming? {
        guard let st = stream(index)?.pointee else { return nil }
        let par = st.codecpar.pointee
        let kind = TrackInfo.Kind(par.codec_type)
        let frame: (Int64, Int64) =
            switch kind {
            case .video: (Int64(st.r_frame_rate.den), Int64(st.r_frame_rate.num))
            case .audio: (Int64(ff.av_get_audio_frame_duration2(st.codecpar, 1)), Int64(par.sample_rate))
            default: (0, 0)
            }
        return StreamTiming(
            id: st.id, start: Packet.known(st.start_time), timeBase: (st.time_base.num, st.time_base.den),
            frame: frame, kind: kind)
    }

    /// Sets the duration of stream `index`, found outside libavformat, in its time base.
    public func setDuration(_ duration: Int64, stream index: Int) {
        stream(index)?.pointee.duration = duration
    }
}
