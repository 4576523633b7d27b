/// A packed 8-bit RGB picture: what thumbnails are scaled to, rotated, and encoded or drawn on a sheet from.
public struct RGBImage: Sendable, Equatable {
    public let width: Int
    public let height: Int
    public var pixels: [UInt8]

    public init(width: Int, height: Int, pixels: [UInt8]) {
        self.width = width
        self.height = height
        self.pixels = pixels
    }

    /// A black picture.
    public init(width: Int, height: Int) {
        self.init(width: width, height: height, pixels: [UInt8](repeating: 0, count: width * height * 3))
    }

    /// The picture turned clockwise by `degrees` (a multiple of 90), as a display matrix asks.
    public func rotated(clockwise degrees: Int) -> RGBImage {
        let turns = ((degrees % 360) + 360) % 360 / 90
        guard turns != 0 else { return self }
        let (w, h) = turns % 2 == 0 ? (width, height) : (height, width)
        var out = [UInt8](repeating: 0, count: pixels.count)
        for y in 0..<height {
            for x in 0..<width {
                let (nx, ny): (Int, Int)
                switch turns {
                case 1: (nx, ny) = (height - 1 - y, x)
                case 2: (nx, ny) = (width - 1 - x, height - 1 - y)
                default: (nx, ny) = (y, width - 1 - x)
                }
                let src = (y * width + x) * 3, dst = (ny * w + nx) * 3
                out[dst] = pixels[src]
                out[dst + 1] = pixels[src + 1]
                out[dst + 2] = pixels[src + 2]
            }
        }
        return RGBImage(width: w, height: h, pixels: out)
    }
}
