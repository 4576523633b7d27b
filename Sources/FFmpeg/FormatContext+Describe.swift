import CFFmpeg

/// What libavformat says of a container and its streams, in the names ffprobe uses: the part of a
/// probe that comes from the demuxer alone.
public struct FormatDescription: Sendable {
    /// libavformat's short name, e.g. `mov,mp4,m4a,3gp,3g2,mj2`.
    public var format: String
    public var formatLongName: String?
    /// Seconds.
    public var duration: Double?
    public var bitRate: Int64?
    public var startTime: Double?
    public var tracks: [TrackInfo]
    public var tags: [(String, String)]
}

/// Reading the container's and streams' fields, as ffprobe names them.
extension FormatContext {
    public func describe() -> FormatDescription {
        let fc = pointer.pointee
        let timeBase = Double(AV_TIME_BASE)
        return FormatDescription(
            format: formatName,
            formatLongName: fc.iformat.pointee.long_name.map { String(cString: $0) },
            duration: fc.duration == mp_av_nopts_value() || fc.duration < 0 ? nil : Double(fc.duration) / timeBase,
            bitRate: fc.bit_rate > 0 ? fc.bit_rate : nil,
            startTime: fc.start_time == mp_av_nopts_value() ? nil : Double(fc.start_time) / timeBase,
            tracks: (0..<streamCount).compactMap { stream($0).map(track) },
            tags: FormatContext.tags(fc.metadata))
    }

    /// Some video or audio stream lacks what a probe reports of it (picture size, pixel format and
    /// frame rate; sample rate, channels and sample format): an analysis that stopped too soon.
    package var leavesAStreamUndescribed: Bool {
        (0..<streamCount).contains { index in
            guard let s = stream(index)?.pointee, let par = s.codecpar?.pointee else { return false }
            switch par.codec_type {
            case AVMEDIA_TYPE_VIDEO:
                return par.width <= 0 || par.format < 0 || s.r_frame_rate.num <= 0
            case AVMEDIA_TYPE_AUDIO:
                return par.sample_rate <= 0 || par.ch_layout.nb_channels <= 0 || par.format < 0
            default:
                return false
            }
        }
    }

    /// The container's ID of stream `index`: an MP4's track ID.
    package func containerID(stream index: Int) -> Int32? { stream(index)?.pointee.id }

    /// The codec profile; for AAC, when no frame was decoded (the probe of a fragmented file reads
    /// none), its audio object type from the first five bits of the AudioSpecificConfig, which
    /// libavcodec numbers one lower as its profile.
    static func profile(_ par: AVCodecParameters) -> Int32 {
        guard par.profile == FF_PROFILE_UNKNOWN, par.codec_id == AV_CODEC_ID_AAC, par.extradata_size >= 1,
            let config = par.extradata
        else { return par.profile }
        let objectType = Int32(config[0] >> 3)
        return (1..<31).contains(objectType) ? objectType - 1 : par.profile
    }

    private func track(_ st: UnsafeMutablePointer<AVStream>) -> TrackInfo {
        let s = st.pointee
        let par = s.codecpar.pointee
        let timeBase = Double(s.time_base.num) / Double(max(1, s.time_base.den))
        var info = TrackInfo(
            index: Int(s.index), kind: TrackInfo.Kind(par.codec_type),
            codec: FormatContext.codecName(par.codec_id),
            codecLongName: ff.avcodec_descriptor_get(par.codec_id).flatMap { $0.pointee.long_name }.map {
                String(cString: $0)
            },
            profile: ff.avcodec_profile_name(par.codec_id, FormatContext.profile(par)).map { String(cString: $0) },
            bitRate: par.bit_rate > 0 ? par.bit_rate : nil,
            duration: s.duration == mp_av_nopts_value() || s.duration < 0 ? nil : Double(s.duration) * timeBase,
            frames: s.nb_frames > 0 ? s.nb_frames : nil,
            isDefault: s.disposition & AV_DISPOSITION_DEFAULT != 0,
            tags: FormatContext.tags(s.metadata))
        switch par.codec_type {
        case AVMEDIA_TYPE_VIDEO:
            info.width = par.width > 0 ? Int(par.width) : nil
            info.height = par.height > 0 ? Int(par.height) : nil
            let rate = s.avg_frame_rate.num > 0 && s.avg_frame_rate.den > 0 ? s.avg_frame_rate : s.r_frame_rate
            if rate.num > 0 && rate.den > 0 { info.frameRate = Double(rate.num) / Double(rate.den) }
            if par.format >= 0 {
                info.pixelFormat = ff.av_get_pix_fmt_name(AVPixelFormat(rawValue: par.format)).map {
                    String(cString: $0)
                }
            }
            let rotation = mp_stream_rotation(st)
            if !rotation.isNaN { info.rotation = rotation == 0 ? 0 : rotation }
        case AVMEDIA_TYPE_AUDIO:
            info.sampleRate = par.sample_rate > 0 ? Int(par.sample_rate) : nil
            info.channels = par.ch_layout.nb_channels > 0 ? Int(par.ch_layout.nb_channels) : nil
            var layout = par.ch_layout
            var buffer = [CChar](repeating: 0, count: 128)
            if par.ch_layout.order != AV_CHANNEL_ORDER_UNSPEC,
                ff.av_channel_layout_describe(&layout, &buffer, buffer.count) > 0
            {
                info.channelLayout = String(
                    decoding: buffer.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self)
            }
        default: break
        }
        info.language = info.tags.first(where: { $0.0 == "language" })?.1
        return info
    }

    /// All entries of an `AVDictionary`, in order, as ffprobe prints them (`validatedText`).
    static func tags(_ dict: OpaquePointer?) -> [(String, String)] {
        var out: [(String, String)] = []
        var entry: UnsafeMutablePointer<AVDictionaryEntry>?
        while let e = ff.av_dict_get(dict, "", entry, AV_DICT_IGNORE_SUFFIX) {
            out.append((validatedText(e.pointee.key), validatedText(e.pointee.value)))
            entry = e
        }
        return out
    }

    /// Text from a container (tags are whatever bytes the file holds) with each sequence that is
    /// not UTF-8 dropped, the way ffprobe's writers validate it by default, so both print the same.
    /// The corresponding FFmpeg function is `av_utf8_decode`.
    static func validatedText(_ text: UnsafePointer<CChar>) -> String {
        let count = strlen(text)
        return text.withMemoryRebound(to: UInt8.self, capacity: count) { start in
            let end = start + count
            var kept: [UInt8] = []
            kept.reserveCapacity(count)
            var next: UnsafePointer<UInt8>? = start
            while let from = next, from < end {
                var code: Int32 = 0
                let valid = ff.av_utf8_decode(&code, &next, end, 0) >= 0
                if valid, let to = next { kept.append(contentsOf: UnsafeBufferPointer(start: from, count: to - from)) }
            }
            return String(decoding: kept, as: UTF8.self)
        }
    }
}
