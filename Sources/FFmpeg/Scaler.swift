import CFFmpeg

#if canImport(Glibc)
import Glibc
#endif

/// Converts pictures between decoded frames, `RGBImage`s and encoder frames with libswscale; the
/// single owner of its `SwsContext` (recreated when the formats or sizes change, so one `Scaler`
/// per direction keeps it reused).
package final class Scaler {
    private var context: OpaquePointer?
    private var key: [Int32] = []

    package init() {}

    deinit { ff.sws_freeContext(context) }

    /// The corresponding FFmpeg function is `sws_getContext`.
    private func context(from src: (Int, Int, AVPixelFormat), to dst: (Int, Int, AVPixelFormat)) throws -> OpaquePointer
    {
        let wanted = [Int32(src.0), Int32(src.1), src.2.rawValue, Int32(dst.0), Int32(dst.1), dst.2.rawValue]
        if context == nil || key != wanted {
            ff.sws_freeContext(context)
            context = ff.sws_getContext(
                Int32(src.0), Int32(src.1), src.2, Int32(dst.0), Int32(dst.1), dst.2,
                Int32(SWS_BICUBIC), nil, nil, nil)
            key = wanted
        }
        guard let context else { throw FFmpegError(code: mp_averror(EINVAL), function: "sws_getContext") }
        return context
    }

    /// `frame` as RGB at `width` × `height`.
    /// The corresponding FFmpeg function is `sws_scale`.
    package func rgb(_ frame: Frame, width: Int, height: Int) throws -> RGBImage {
        let sws = try context(
            from: (frame.width, frame.height, frame.pixelFormat), to: (width, height, AV_PIX_FMT_RGB24))
        var image = RGBImage(width: width, height: height)
        let rows = image.pixels.withUnsafeMutableBufferPointer { out -> Int32 in
            let dst: [UnsafeMutablePointer<UInt8>?] = [out.baseAddress, nil, nil, nil]
            let dstStride: [Int32] = [Int32(width * 3), 0, 0, 0]
            let src = frame.planes.map { UnsafePointer($0) }
            return ff.sws_scale(sws, src, frame.lineSizes, 0, Int32(frame.height), dst, dstStride)
        }
        guard rows > 0 else { throw FFmpegError(code: rows < 0 ? rows : mp_averror(EINVAL), function: "sws_scale") }
        return image
    }

    /// Draws `image` scaled to `width` × `height` into `frame` (in its pixel format) with its
    /// top-left corner at (`x`, `y`). For subsampled chroma, `x` and `y` must be even.
    /// The corresponding FFmpeg function is `sws_scale`.
    package func draw(_ image: RGBImage, into frame: Frame, x: Int, y: Int, width: Int, height: Int) throws {
        guard x >= 0, y >= 0, width > 0, height > 0, x + width <= frame.width, y + height <= frame.height,
            let desc = ff.av_pix_fmt_desc_get(frame.pixelFormat)
        else {
            throw FFmpegError(code: mp_averror(EINVAL), function: "sws_scale")
        }
        let sws = try context(
            from: (image.width, image.height, AV_PIX_FMT_RGB24), to: (width, height, frame.pixelFormat))
        // Each plane's pointer moved to (x, y): chroma planes are subsampled, packed planes step
        // several bytes per pixel.
        var dst = frame.planes
        let strides = frame.lineSizes
        let components = withUnsafePointer(to: desc.pointee.comp) {
            $0.withMemoryRebound(to: AVComponentDescriptor.self, capacity: 4) {
                Array(UnsafeBufferPointer(start: $0, count: Int(desc.pointee.nb_components)))
            }
        }
        for plane in 0..<4 {
            guard let base = dst[plane] else { continue }
            let chroma = plane == 1 || plane == 2
            let shiftX = chroma ? Int(desc.pointee.log2_chroma_w) : 0,
                shiftY = chroma ? Int(desc.pointee.log2_chroma_h) : 0
            let step = components.filter { Int($0.plane) == plane }.map { Int($0.step) }.max() ?? 1
            dst[plane] = base + (y >> shiftY) * Int(strides[plane]) + (x >> shiftX) * step
        }
        let rows = image.pixels.withUnsafeBufferPointer { src -> Int32 in
            let srcData: [UnsafePointer<UInt8>?] = [src.baseAddress, nil, nil, nil]
            let srcStride: [Int32] = [Int32(image.width * 3), 0, 0, 0]
            return ff.sws_scale(sws, srcData, srcStride, 0, Int32(image.height), dst, strides)
        }
        guard rows > 0 else { throw FFmpegError(code: rows < 0 ? rows : mp_averror(EINVAL), function: "sws_scale") }
    }
}
