import CFFmpeg
#if canImport(Glibc)
import Glibc
#endif

/// Image file formats thumbnails are written in.
public enum ImageFormat: String, Sendable, CaseIterable {
    case jpg, png, webp

    var encoderName: String {
        switch self {
        case .jpg: return "mjpeg"
        case .png: return "png"
        case .webp: return "libwebp"
        }
    }

    var pixelFormat: AVPixelFormat {
        switch self {
        case .jpg: return AV_PIX_FMT_YUVJ420P
        case .png: return AV_PIX_FMT_RGB24
        case .webp: return AV_PIX_FMT_YUV420P
        }
    }
}

/// Encodes an `RGBImage` as one JPEG, PNG or WebP picture with libavcodec.
enum ImageEncoder {
    /// `quality` 1...100 (higher is better; PNG is lossless and ignores it).
    /// The corresponding FFmpeg functions are `avcodec_find_encoder_by_name`, `avcodec_open2`,
    /// `avcodec_send_frame` and `avcodec_receive_packet`.
    static func encode(_ image: RGBImage, as format: ImageFormat, quality: Int) throws -> [UInt8] {
        guard let codec = avcodec_find_encoder_by_name(format.encoderName) else {
            throw MediaError.malformed(input: "encoder", detail: "this FFmpeg has no \(format.encoderName) encoder")
        }
        var ctx = avcodec_alloc_context3(codec)
        guard let context = ctx else { throw FFmpegError(code: mp_averror(ENOMEM), function: "avcodec_alloc_context3") }
        defer { avcodec_free_context(&ctx) }
        context.pointee.width = Int32(image.width)
        context.pointee.height = Int32(image.height)
        context.pointee.pix_fmt = format.pixelFormat
        context.pointee.time_base = AVRational(num: 1, den: 25)
        context.pointee.thread_count = 1
        let q = max(1, min(100, quality))
        // mjpeg: a fixed quantiser 2 (best) ... 31 (worst), as `ffmpeg -q:v` sets it.
        let qscale = Int32(2 + (100 - q) * 29 / 99)
        if format == .jpg {
            context.pointee.flags |= AV_CODEC_FLAG_QSCALE
            context.pointee.global_quality = qscale * FF_QP2LAMBDA
        }
        if format == .webp { av_opt_set(context.pointee.priv_data, "quality", "\(q)", 0) }
        try FFmpegError.check(avcodec_open2(context, codec, nil), "avcodec_open2")

        let frame = try Frame()
        frame.pointer.pointee.width = Int32(image.width)
        frame.pointer.pointee.height = Int32(image.height)
        frame.pointer.pointee.format = format.pixelFormat.rawValue
        frame.pointer.pointee.pts = 0
        if format == .jpg { frame.pointer.pointee.quality = qscale * FF_QP2LAMBDA }
        try FFmpegError.check(av_frame_get_buffer(frame.pointer, 0), "av_frame_get_buffer")
        try convert(image, into: frame.pointer)

        try FFmpegError.check(avcodec_send_frame(context, frame.pointer), "avcodec_send_frame")
        try FFmpegError.check(avcodec_send_frame(context, nil), "avcodec_send_frame")
        let packet = try Packet()
        var bytes: [UInt8] = []
        while true {
            let rc = avcodec_receive_packet(context, packet.pointer)
            if rc == mp_averror_eof() || rc == mp_averror(EAGAIN) { break }
            try FFmpegError.check(rc, "avcodec_receive_packet")
            bytes += UnsafeBufferPointer(start: packet.pointer.pointee.data, count: Int(packet.pointer.pointee.size))
            packet.unref()
        }
        guard !bytes.isEmpty else { throw FFmpegError(code: mp_averror(EINVAL), function: "avcodec_receive_packet") }
        return bytes
    }

    /// RGB24 → the encoder's pixel format, with libswscale.
    private static func convert(_ image: RGBImage, into frame: UnsafeMutablePointer<AVFrame>) throws {
        guard let sws = sws_getContext(Int32(image.width), Int32(image.height), AV_PIX_FMT_RGB24,
                                       Int32(image.width), Int32(image.height), AVPixelFormat(rawValue: frame.pointee.format),
                                       Int32(SWS_BICUBIC), nil, nil, nil) else {
            throw FFmpegError(code: mp_averror(EINVAL), function: "sws_getContext")
        }
        defer { sws_freeContext(sws) }
        image.pixels.withUnsafeBufferPointer { src in
            let srcData: [UnsafePointer<UInt8>?] = [src.baseAddress, nil, nil, nil]
            let srcStride: [Int32] = [Int32(image.width * 3), 0, 0, 0]
            withUnsafeMutablePointer(to: &frame.pointee.data) { data in
                data.withMemoryRebound(to: UnsafeMutablePointer<UInt8>?.self, capacity: 8) { dst in
                    withUnsafeMutablePointer(to: &frame.pointee.linesize) { lines in
                        lines.withMemoryRebound(to: Int32.self, capacity: 8) { dstStride in
                            _ = sws_scale(sws, srcData, srcStride, 0, Int32(image.height), dst, dstStride)
                        }
                    }
                }
            }
        }
    }
}
