import CFFmpeg

#if canImport(Glibc)
import Glibc
import ByteSources
#endif

/// A libavcodec still-image encoder (JPEG, PNG or WebP) for one picture size; the single owner
/// of its `AVCodecContext`, freed in `deinit`.
package final class FrameEncoder {
    private let context: UnsafeMutablePointer<AVCodecContext>
    let format: ImageFormat
    package let width: Int
    package let height: Int
    /// mjpeg's fixed quantiser for the quality, which each frame must carry too.
    private let qscale: Int32

    /// `quality` 1...100 (higher is better; PNG is lossless and ignores it).
    /// The corresponding FFmpeg functions are `avcodec_find_encoder_by_name`, `avcodec_alloc_context3`
    /// and `avcodec_open2`.
    package init(format: ImageFormat, width: Int, height: Int, quality: Int) throws {
        try FFmpegLibraries.require()  // sprite sheets encode without a demuxer opened first
        guard let codec = ff.avcodec_find_encoder_by_name(format.encoderName) else {
            throw MediaError.malformed(input: "encoder", detail: "this FFmpeg has no \(format.encoderName) encoder")
        }
        guard let ctx = ff.avcodec_alloc_context3(codec) else {
            throw FFmpegError(code: mp_averror(ENOMEM), function: "avcodec_alloc_context3")
        }
        context = ctx
        self.format = format
        self.width = width
        self.height = height
        let q = max(1, min(100, quality))
        // mjpeg: a fixed quantiser 2 (best) ... 31 (worst), as `ffmpeg -q:v` sets it.
        qscale = Int32(2 + (100 - q) * 29 / 99)
        ctx.pointee.width = Int32(clamping: width)
        ctx.pointee.height = Int32(clamping: height)
        ctx.pointee.pix_fmt = format.pixelFormat
        ctx.pointee.time_base = AVRational(num: 1, den: 25)
        ctx.pointee.thread_count = 1
        if format == .jpg {
            ctx.pointee.flags |= AV_CODEC_FLAG_QSCALE
            ctx.pointee.global_quality = qscale * FF_QP2LAMBDA
        }
        if format == .webp { _ = ff.av_opt_set(ctx.pointee.priv_data, "quality", "\(q)", 0) }
        try FFmpegError.check(ff.avcodec_open2(ctx, codec, nil), "avcodec_open2")
    }

    deinit {
        var ctx: UnsafeMutablePointer<AVCodecContext>? = context
        ff.avcodec_free_context(&ctx)
    }

    /// A picture of this encoder's size and pixel format to draw into.
    package func makeFrame() throws -> Frame {
        let frame = try Frame(width: width, height: height, format: format.pixelFormat)
        // JPEG's YUV is full range (the J in YUVJ): black is 0, not 16.
        if format == .jpg { frame.pointer.pointee.color_range = AVCOL_RANGE_JPEG }
        return frame
    }

    /// Encodes `frame` (from `makeFrame`) as one image file. An encoder encodes one picture.
    /// The corresponding FFmpeg functions are `avcodec_send_frame` and `avcodec_receive_packet`.
    package func encode(_ frame: Frame) throws -> [UInt8] {
        frame.pointer.pointee.pts = 0
        if format == .jpg { frame.pointer.pointee.quality = qscale * FF_QP2LAMBDA }
        try FFmpegError.check(ff.avcodec_send_frame(context, frame.pointer), "avcodec_send_frame")
        try FFmpegError.check(ff.avcodec_send_frame(context, nil), "avcodec_send_frame")
        let packet = try Packet()
        var bytes: [UInt8] = []
        while true {
            let rc = ff.avcodec_receive_packet(context, packet.pointer)
            if rc == mp_averror_eof() || rc == mp_averror(EAGAIN) { break }
            try FFmpegError.check(rc, "avcodec_receive_packet")
            bytes += packet.bytes
            packet.unref()
        }
        guard !bytes.isEmpty else { throw FFmpegError(code: mp_averror(EINVAL), function: "avcodec_receive_packet") }
        return bytes
    }
}
