import CFFmpeg

/// An opened demuxer: the single owner of an `AVFormatContext`, closed in `deinit`.
public final class FormatContext {
    let pointer: UnsafeMutablePointer<AVFormatContext>

    /// Opens a local file with libavformat's own I/O and reads the stream headers.
    /// The corresponding FFmpeg functions are `avformat_open_input` and `avformat_find_stream_info`.
    public init(path: String) throws {
        var context: UnsafeMutablePointer<AVFormatContext>?
        try FFmpegError.check(avformat_open_input(&context, path, nil, nil), "avformat_open_input")
        guard let context else { throw FFmpegError(code: mp_averror(ENOMEM), function: "avformat_open_input") }
        pointer = context
        try FFmpegError.check(avformat_find_stream_info(context, nil), "avformat_find_stream_info")
    }

    deinit {
        var context: UnsafeMutablePointer<AVFormatContext>? = pointer
        avformat_close_input(&context)
    }

    /// libavformat's short name for the container, e.g. `mov,mp4,m4a,3gp,3g2,mj2`.
    public var formatName: String { String(cString: pointer.pointee.iformat.pointee.name) }

    /// Duration in seconds, if the container states one.
    public var duration: Double? {
        let d = pointer.pointee.duration
        guard d != mp_av_nopts_value(), d >= 0 else { return nil }
        return Double(d) / Double(AV_TIME_BASE)
    }

    public var streamCount: Int { Int(pointer.pointee.nb_streams) }

    /// The codec name of each stream, in stream order.
    public var codecNames: [String] {
        (0..<streamCount).map { i in
            guard let stream = pointer.pointee.streams[i], let name = avcodec_get_name(stream.pointee.codecpar.pointee.codec_id)
            else { return "unknown" }
            return String(cString: name)
        }
    }
}

#if canImport(Glibc)
import Glibc
#endif
