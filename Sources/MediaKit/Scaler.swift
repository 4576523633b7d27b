import CFFmpeg
#if canImport(Glibc)
import Glibc
#endif

/// Converts decoded frames to `RGBImage`s of a given size with libswscale; the single owner of
/// its `SwsContext` (recreated when the source format or size changes).
final class Scaler {
    private var context: OpaquePointer?
    private var key: (Int32, Int32, Int32, Int, Int) = (0, 0, -1, 0, 0)

    deinit { sws_freeContext(context) }

    /// The corresponding FFmpeg functions are `sws_getContext` and `sws_scale`.
    func rgb(_ frame: UnsafePointer<AVFrame>, width: Int, height: Int) throws -> RGBImage {
        let f = frame.pointee
        let wanted = (f.width, f.height, f.format, width, height)
        if context == nil || key != wanted {
            sws_freeContext(context)
            context = sws_getContext(f.width, f.height, AVPixelFormat(rawValue: f.format), Int32(width), Int32(height),
                                     AV_PIX_FMT_RGB24, Int32(SWS_BICUBIC), nil, nil, nil)
            key = wanted
        }
        guard let context else { throw FFmpegError(code: mp_averror(EINVAL), function: "sws_getContext") }
        var image = RGBImage(width: width, height: height)
        let rows = image.pixels.withUnsafeMutableBufferPointer { out -> Int32 in
            var dst: [UnsafeMutablePointer<UInt8>?] = [out.baseAddress, nil, nil, nil]
            var dstStride: [Int32] = [Int32(width * 3), 0, 0, 0]
            let src = withUnsafePointer(to: f.data) { $0.withMemoryRebound(to: UnsafePointer<UInt8>?.self, capacity: 8) { Array(UnsafeBufferPointer(start: $0, count: 8)) } }
            let srcStride = withUnsafePointer(to: f.linesize) { $0.withMemoryRebound(to: Int32.self, capacity: 8) { Array(UnsafeBufferPointer(start: $0, count: 8)) } }
            return sws_scale(context, src, srcStride, 0, f.height, &dst, &dstStride)
        }
        guard rows > 0 else { throw FFmpegError(code: rows < 0 ? rows : mp_averror(EINVAL), function: "sws_scale") }
        return image
    }
}
