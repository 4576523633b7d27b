import CFFmpeg

/// What an opened decoder knows before it is fed: ffprobe opens one per stream and reports some
/// of its fields, so `ProbeDetails` does the same.
extension FrameDecoder {
    /// The decoder ffprobe would open for stream `index`, opened the same way (no threads, no
    /// options); nil where ffprobe opens none: the codec is still unknown after probing, or
    /// libavcodec has no decoder for it.
    static func describing(_ format: FormatContext, stream index: Int) throws -> FrameDecoder? {
        guard let id = format.stream(index)?.pointee.codecpar.pointee.codec_id,
            id != AV_CODEC_ID_PROBE, ff.avcodec_find_decoder(id) != nil
        else { return nil }
        return try FrameDecoder(format, stream: index, threading: .none)
    }

    var details: DecoderDetails {
        let c = context.pointee
        return DecoderDetails(
            codedWidth: Int(c.coded_width), codedHeight: Int(c.coded_height),
            closedCaptions: c.properties & UInt32(FF_CODEC_PROPERTY_CLOSED_CAPTIONS) != 0,
            filmGrain: c.properties & UInt32(FF_CODEC_PROPERTY_FILM_GRAIN) != 0,
            refs: Int(c.refs),
            maxBitRate: c.rc_max_rate > 0 ? c.rc_max_rate : nil,
            bitsPerRawSample: c.bits_per_raw_sample > 0 ? Int(c.bits_per_raw_sample) : nil,
            exportedOptions: exportedOptions)
    }

    /// The private options the decoder exports (`AV_OPT_FLAG_EXPORT`), as text, in declaration order.
    /// The corresponding FFmpeg functions are `av_opt_next` and `av_opt_get`.
    private var exportedOptions: [(String, String)] {
        guard context.pointee.codec.pointee.priv_class != nil, let priv = context.pointee.priv_data else { return [] }
        var options: [(String, String)] = []
        var option: UnsafePointer<AVOption>?
        while let next = ff.av_opt_next(priv, option) {
            option = next
            guard next.pointee.flags & AV_OPT_FLAG_EXPORT != 0 else { continue }
            var value: UnsafeMutablePointer<UInt8>?
            guard ff.av_opt_get(priv, next.pointee.name, 0, &value) >= 0, let value else { continue }
            options.append((String(cString: next.pointee.name), String(cString: value)))
            ff.av_free(value)
        }
        return options
    }
}
