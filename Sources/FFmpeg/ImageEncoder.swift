import CFFmpeg

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

/// Encodes an `RGBImage` as one JPEG, PNG or WebP picture.
package enum ImageEncoder {
    /// `quality` 1...100 (higher is better; PNG is lossless and ignores it).
    package static func encode(_ image: RGBImage, as format: ImageFormat, quality: Int) throws -> [UInt8] {
        let encoder = try FrameEncoder(format: format, width: image.width, height: image.height, quality: quality)
        let frame = try encoder.makeFrame()
        try Scaler().draw(image, into: frame, x: 0, y: 0, width: image.width, height: image.height)
        return try encoder.encode(frame)
    }
}
