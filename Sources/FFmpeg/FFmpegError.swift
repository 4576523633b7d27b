import CFFmpeg

/// A failed FFmpeg call: its name and AVERROR code.
public struct FFmpegError: Error, CustomStringConvertible, Equatable {
    public let code: Int32
    public let function: String

    /// What was being done and what went wrong, in words, with the call's name last for reports:
    /// "seeking failed: the data is damaged or not supported (av_seek_frame)". FFmpeg's own text
    /// misleads for its generic -1, which it prints as "Operation not permitted".
    /// FFmpeg found the data invalid (`AVERROR_INVALIDDATA`): for an open, no container it knows.
    public var isInvalidData: Bool { code == mp_averror_invaliddata() }

    public var description: String {
        "\(FFmpegError.activity(function)) failed: \(FFmpegError.meaning(of: code)) (\(function))"
    }

    /// FFmpeg's text for an AVERROR code (`av_strerror`).
    public static func message(for code: Int32) -> String {
        guard FFmpegLibraries.available else { return "error \(code)" }
        var buffer = [CChar](repeating: 0, count: 256)
        _ = ff.av_strerror(code, &buffer, buffer.count)
        let bytes = buffer.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }
        return String(decoding: bytes, as: UTF8.self)
    }

    private static func activity(_ function: String) -> String {
        switch function {
        case "avformat_open_input": return "opening it"
        case "avformat_find_stream_info": return "reading its stream parameters"
        case "av_read_frame": return "reading its packets"
        case "av_seek_frame", "avformat_seek_file": return "seeking"
        case "avcodec_open2", "avcodec_parameters_to_context": return "opening the decoder"
        case "avcodec_send_packet", "avcodec_receive_frame": return "decoding"
        case "sws_getContext", "sws_scale": return "scaling the picture"
        default: return function.hasPrefix("avcodec_") ? "encoding or decoding" : "FFmpeg's \(function)"
        }
    }

    private static func meaning(of code: Int32) -> String {
        switch code {
        case mp_averror_invaliddata(): return "the data is invalid (damaged or truncated)"
        case mp_averror_eof(): return "the file ended where more was expected"
        case mp_averror(ENOMEM): return "it would need more memory than FFmpeg allows (a damaged size or count?)"
        case mp_averror(EPERM): return "the data is damaged or not supported"
        case mp_averror(ENOSYS): return "not supported by this FFmpeg"
        default: return message(for: code)
        }
    }

    /// Returns `result` when it is not negative, else throws with `function`'s name.
    @discardableResult
    static func check(_ result: Int32, _ function: String) throws -> Int32 {
        guard result >= 0 else { throw FFmpegError(code: result, function: function) }
        return result
    }
}
