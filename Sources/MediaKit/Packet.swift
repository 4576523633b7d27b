import CFFmpeg
#if canImport(Glibc)
import Glibc
#endif

/// An `AVPacket`; the single owner, freed in `deinit`.
final class Packet {
    let pointer: UnsafeMutablePointer<AVPacket>

    init() throws {
        guard let p = av_packet_alloc() else { throw FFmpegError(code: mp_averror(ENOMEM), function: "av_packet_alloc") }
        pointer = p
    }

    deinit {
        var p: UnsafeMutablePointer<AVPacket>? = pointer
        av_packet_free(&p)
    }

    /// Drops the payload so the packet can be reused.
    func unref() { av_packet_unref(pointer) }
}

/// An `AVFrame`; the single owner, freed in `deinit`.
final class Frame {
    let pointer: UnsafeMutablePointer<AVFrame>

    init() throws {
        guard let f = av_frame_alloc() else { throw FFmpegError(code: mp_averror(ENOMEM), function: "av_frame_alloc") }
        pointer = f
    }

    deinit {
        var f: UnsafeMutablePointer<AVFrame>? = pointer
        av_frame_free(&f)
    }

    func unref() { av_frame_unref(pointer) }
}
