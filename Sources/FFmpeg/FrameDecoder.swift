import CFFmpeg

#if canImport(Glibc)
import Glibc
import ByteSources
#endif

/// A libavcodec decoder for one stream; the single owner of its `AVCodecContext`.
package final class FrameDecoder {
    /// How the decoder may use threads.
    package enum Threading {
        /// Frame and slice threads, as many as there are cores, as libavcodec picks.
        case all
        /// Threads that work inside one frame, with no frame of delay: for decoding single key frames.
        case sliceOnly
        /// None: libavcodec's default, which ffprobe keeps (no thread is started for a decoder never fed).
        case none
    }

    let context: UnsafeMutablePointer<AVCodecContext>
    private let timeBase: AVRational
    private let frame: Frame

    /// The corresponding FFmpeg functions are `avcodec_find_decoder`, `avcodec_parameters_to_context`
    /// and `avcodec_open2`.
    package init(_ format: FormatContext, stream index: Int, threading: Threading = .all) throws {
        guard let stream = format.stream(index) else { throw MediaError.noTracks(detail: "no track #\(index)") }
        let par = stream.pointee.codecpar!
        guard let codec = ff.avcodec_find_decoder(par.pointee.codec_id) else {
            throw MediaError.malformed(
                input: "stream #\(index)",
                detail: "no decoder for codec \(FormatContext.codecName(par.pointee.codec_id))")
        }
        guard let ctx = ff.avcodec_alloc_context3(codec) else {
            throw FFmpegError(code: mp_averror(ENOMEM), function: "avcodec_alloc_context3")
        }
        context = ctx
        timeBase = stream.pointee.time_base
        frame = try Frame()
        try FFmpegError.check(ff.avcodec_parameters_to_context(ctx, par), "avcodec_parameters_to_context")
        ctx.pointee.pkt_timebase = stream.pointee.time_base
        switch threading {
        case .all: ctx.pointee.thread_count = 0  // as many as there are cores
        case .sliceOnly:
            ctx.pointee.thread_count = 0
            ctx.pointee.thread_type = FF_THREAD_SLICE
        case .none: break
        }
        try FFmpegError.check(ff.avcodec_open2(ctx, codec, nil), "avcodec_open2")
    }

    deinit {
        var ctx: UnsafeMutablePointer<AVCodecContext>? = context
        ff.avcodec_free_context(&ctx)
    }

    /// Sends a packet (nil flushes) and hands each decoded frame to `body`, which must not keep it
    /// (take a `Frame.reference` instead). Returns the first decode error, if any; decoding goes on
    /// past it as players do.
    package func decode(_ packet: Packet?, _ body: (Frame) throws -> Void) throws -> FFmpegError? {
        var firstError: FFmpegError?
        let sent = ff.avcodec_send_packet(context, packet?.pointer)
        if sent < 0 && sent != mp_averror(EAGAIN) && sent != mp_averror_eof() {
            firstError = FFmpegError(code: sent, function: "avcodec_send_packet")
        }
        while true {
            let rc = ff.avcodec_receive_frame(context, frame.pointer)
            if rc == mp_averror(EAGAIN) || rc == mp_averror_eof() { break }
            if rc < 0 {
                firstError = firstError ?? FFmpegError(code: rc, function: "avcodec_receive_frame")
                break
            }
            defer { frame.unref() }
            try body(frame)
        }
        return firstError
    }

    /// Forgets buffered frames and the end-of-stream state, before decoding from a new position.
    /// The corresponding FFmpeg function is `avcodec_flush_buffers`.
    package func flush() { ff.avcodec_flush_buffers(context) }

    /// A timestamp of this stream in seconds.
    package func seconds(_ timestamp: Int64) -> Double {
        Double(timestamp) * Double(timeBase.num) / Double(timeBase.den)
    }
}
