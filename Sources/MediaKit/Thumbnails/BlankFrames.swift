import FFmpeg

/// Pictures that show nothing: nearly black (a fade, the black first frame encoders and editors
/// put at the start) or flat (one colour: a slate, a blank card). The luma of every seventh pixel
/// is enough to tell.
enum BlankFrames {
    /// Flat: the luma's standard deviation below this (of 255).
    static let flatDeviation = 8.0
    /// Nearly black: the mean luma below this, with little detail (a dark scene has more).
    static let darkMean = 18.0
    static let darkDeviation = 16.0
    /// How far past a blank key frame `--skip-black` looks: key frames and seconds.
    static let candidates = 4
    static let reach = 10.0

    static func isBlank(_ image: RGBImage) -> Bool {
        var sum = 0.0, squares = 0.0, n = 0.0
        var i = 0
        let stride = 7 * 3
        while i + 2 < image.pixels.count {
            let y =
                (77 * Double(image.pixels[i]) + 150 * Double(image.pixels[i + 1]) + 29 * Double(image.pixels[i + 2]))
                / 256
            sum += y
            squares += y * y
            n += 1
            i += stride
        }
        guard n > 0 else { return true }
        let mean = sum / n
        let deviation = max(0, squares / n - mean * mean).squareRoot()
        return deviation < flatDeviation || (mean < darkMean && deviation < darkDeviation)
    }
}
