import CFFmpeg

/// A negative return from an FFmpeg function: the AVERROR code and the function's name.
public struct FFmpegError: Error, CustomStringConvertible, Equatable {
    public let code: Int32
    public let function: String

    public var description: String { "\(function): \(FFmpegError.message(for: code))" }

    /// FFmpeg's text for an AVERROR code (`av_strerror`).
    public static func message(for code: Int32) -> String {
        var buffer = [CChar](repeating: 0, count: 256)
        av_strerror(code, &buffer, buffer.count)
        let bytes = buffer.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Returns `result` when it is not negative, else throws with `function`'s name.
    @discardableResult
    static func check(_ result: Int32, _ function: String) throws -> Int32 {
        guard result >= 0 else { throw FFmpegError(code: result, function: function) }
        return result
    }
}
