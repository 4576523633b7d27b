import CFFmpeg

#if canImport(Glibc)
import Glibc
#endif

/// An `AVPacket`; the single owner, freed in `deinit`.
package final class Packet {
    let pointer: UnsafeMutablePointer<AVPacket>

    package init() throws {
        guard let p = ff.av_packet_alloc() else {
            throw FFmpegError(code: mp_averror(ENOMEM), function: "av_packet_alloc")
        }
        pointer = p
    }

    /// A key frame of stream `stream` made from its bytes, at `timestamp` (its time base): for a
    /// decoder fed without the demuxer. The corresponding FFmpeg function is `av_new_packet`.
    package convenience init(keyFrame bytes: [UInt8], stream: Int, timestamp: Int64) throws {
        try self.init()
        guard !bytes.isEmpty else { throw FFmpegError(code: mp_averror_invaliddata(), function: "av_new_packet") }
        guard bytes.count < Int32.max - 64 else {
            throw FFmpegError(code: mp_averror(ENOMEM), function: "av_new_packet")
        }
        try FFmpegError.check(ff.av_new_packet(pointer, Int32(bytes.count)), "av_new_packet")
        if let data = pointer.pointee.data {
            bytes.withUnsafeBufferPointer { data.update(from: $0.baseAddress!, count: bytes.count) }
        }
        pointer.pointee.stream_index = Int32(stream)
        pointer.pointee.pts = timestamp
        pointer.pointee.dts = timestamp
        pointer.pointee.flags |= AV_PKT_FLAG_KEY
    }

    deinit {
        var p: UnsafeMutablePointer<AVPacket>? = pointer
        ff.av_packet_free(&p)
    }

    /// Drops the payload so the packet can be reused.
    func unref() { ff.av_packet_unref(pointer) }

    package var streamIndex: Int { Int(pointer.pointee.stream_index) }
    /// Decode timestamp in the stream's time base, nil when the demuxer does not know it.
    package var dts: Int64? { Packet.known(pointer.pointee.dts) }
    package var pts: Int64? { Packet.known(pointer.pointee.pts) }
    /// Where the packet starts in the file, nil when the demuxer does not say.
    package var position: Int64? { pointer.pointee.pos >= 0 ? pointer.pointee.pos : nil }
    package var size: Int64 { Int64(pointer.pointee.size) }

    /// The payload (an encoder's output), copied out.
    var bytes: [UInt8] {
        guard let data = pointer.pointee.data, pointer.pointee.size > 0 else { return [] }
        return Array(UnsafeBufferPointer(start: data, count: Int(pointer.pointee.size)))
    }

    /// nil for `AV_NOPTS_VALUE`.
    static func known(_ timestamp: Int64) -> Int64? { timestamp == mp_av_nopts_value() ? nil : timestamp }
}

/// An `AVFrame`; the single owner, freed in `deinit`.
package final class Frame {
    let pointer: UnsafeMutablePointer<AVFrame>

    package init() throws {
        guard let f = ff.av_frame_alloc() else {
            throw FFmpegError(code: mp_averror(ENOMEM), function: "av_frame_alloc")
        }
        pointer = f
    }

    /// A frame with its own picture buffer of `width` × `height` in `format`.
    /// The corresponding FFmpeg function is `av_frame_get_buffer`.
    convenience init(width: Int, height: Int, format: AVPixelFormat) throws {
        try self.init()
        pointer.pointee.width = Int32(width)
        pointer.pointee.height = Int32(height)
        pointer.pointee.format = format.rawValue
        try FFmpegError.check(ff.av_frame_get_buffer(pointer, 0), "av_frame_get_buffer")
    }

    deinit {
        var f: UnsafeMutablePointer<AVFrame>? = pointer
        ff.av_frame_free(&f)
    }

    func unref() { ff.av_frame_unref(pointer) }

    /// Paints the whole picture black in its pixel format and color range.
    /// The corresponding FFmpeg function is `av_image_fill_black`.
    package func fillBlack() throws {
        var data = planes
        try FFmpegError.check(
            ff.av_image_fill_black(
                &data, lineSizes.map { Int($0) }, pixelFormat, pointer.pointee.color_range,
                pointer.pointee.width, pointer.pointee.height), "av_image_fill_black")
    }

    /// The picture's first four planes (`data`), nil where the format has fewer.
    var planes: [UnsafeMutablePointer<UInt8>?] {
        withUnsafePointer(to: pointer.pointee.data) {
            $0.withMemoryRebound(to: UnsafeMutablePointer<UInt8>?.self, capacity: 8) {
                Array(UnsafeBufferPointer(start: $0, count: 4))
            }
        }
    }

    /// Bytes from one row to the next in each of `planes` (`linesize`).
    var lineSizes: [Int32] {
        withUnsafePointer(to: pointer.pointee.linesize) {
            $0.withMemoryRebound(to: Int32.self, capacity: 8) { Array(UnsafeBufferPointer(start: $0, count: 4)) }
        }
    }

    /// Makes this frame another reference to `other`'s picture (dropping what it held).
    package func reference(_ other: Frame) throws {
        ff.av_frame_unref(pointer)
        try FFmpegError.check(ff.av_frame_ref(pointer, other.pointer), "av_frame_ref")
    }

    package var width: Int { Int(pointer.pointee.width) }
    package var height: Int { Int(pointer.pointee.height) }
    var pixelFormat: AVPixelFormat { AVPixelFormat(rawValue: pointer.pointee.format) }
    /// The decoder's best guess of the presentation time, in the stream's time base.
    package var bestEffortTimestamp: Int64? { Packet.known(pointer.pointee.best_effort_timestamp) }
    /// The picture's own sample aspect ratio, nil when it does not state one.
    package var sampleAspectRatio: Double? { Frame.ratio(pointer.pointee.sample_aspect_ratio) }

    /// A positive ratio as a number, else nil.
    static func ratio(_ r: AVRational) -> Double? { r.num > 0 && r.den > 0 ? Double(r.num) / Double(r.den) : nil }
}
