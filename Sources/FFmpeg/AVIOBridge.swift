import ByteSources
import CFFmpeg
import Caching
import Foundation
import RangeFetch
import Support
import Synchronization

/// Lets libavformat read a `MediaSource` through a custom `AVIOContext`.
///
/// Contract with FFmpeg: read returns >0 bytes or `AVERROR_EOF`/an error, never 0; seek handles
/// `AVSEEK_SIZE`, `SEEK_SET/CUR/END` and rejects negative offsets; offsets are `Int64`. In FFmpeg 5.1
/// the interrupt callback is consulted only in a few places, so cancellation is also checked in
/// the read callback, which then returns `AVERROR_EXIT`. (A fetch already running is stopped by
/// the same `Cancellation` through libcurl's progress callback.)
///
/// Owns the `AVIOContext` and its buffer. FFmpeg may replace the buffer, so it is freed through
/// `pb->buffer`, exactly once, in `deinit` — also when `avformat_open_input` failed.
final class AVIOBridge {
    static let bufferSize: Int32 = 32 << 10

    let source: any MediaSource
    let cancellation: Cancellation?
    private(set) var context: UnsafeMutablePointer<AVIOContext>!
    // Touched only by the demux thread, inside FFmpeg's callbacks.
    private var position: Int64 = 0
    /// The error behind the last failed read, so callers can report it instead of an AVERROR.
    private(set) var lastError: Error?
    private(set) var interrupted = false
    /// Every byte handed to FFmpeg: what opening a file needs, which a prefetch plan must include.
    private(set) var bytesRead = ByteRangeSet()

    /// `bufferSize` is what libavformat asks of each read: what it takes past the bytes it needs
    /// where they end (a miss is fetched whole, however short the read it could do with).
    init(source: any MediaSource, cancellation: Cancellation?, bufferSize: Int32 = AVIOBridge.bufferSize) throws {
        self.source = source
        self.cancellation = cancellation
        guard let buffer = ff.av_malloc(Int(bufferSize)) else {
            throw FFmpegError(code: mp_averror(ENOMEM), function: "av_malloc")
        }
        let opaque = Unmanaged.passUnretained(self).toOpaque()
        guard
            let ctx = ff.avio_alloc_context(
                buffer.assumingMemoryBound(to: UInt8.self), bufferSize, 0, opaque,
                avioRead, nil, avioSeek)
        else {
            ff.av_free(buffer)
            throw FFmpegError(code: mp_averror(ENOMEM), function: "avio_alloc_context")
        }
        context = ctx
    }

    deinit {
        if context.pointee.buffer != nil { ff.av_freep(&context.pointee.buffer) }
        ff.avio_context_free(&context)
    }

    var shouldStop: Bool { cancellation?.isCancelled == true }

    fileprivate func read(_ buffer: UnsafeMutablePointer<UInt8>, _ size: Int32) -> Int32 {
        if shouldStop {
            interrupted = true
            return mp_averror_exit()
        }
        do {
            let n = try source.read(into: UnsafeMutableRawBufferPointer(start: buffer, count: Int(size)), at: position)
            guard n > 0 else { return mp_averror_eof() }
            bytesRead.insert(position..<position + Int64(n))
            position += Int64(n)
            return Int32(n)
        } catch {
            lastError = error
            return mp_averror(EIO)
        }
    }

    fileprivate func seek(_ offset: Int64, _ whence: Int32) -> Int64 {
        // The size is asked for only where it is needed: for a remote source it may cost a request.
        func size() -> Int64? {
            do { return try source.size() } catch { lastError = error; return nil }
        }
        if whence & mp_avseek_size() != 0 { return size() ?? Int64(mp_averror(ENOSYS)) }
        let target: Int64
        switch whence & ~mp_avseek_force() {
        case SEEK_SET: target = offset
        case SEEK_CUR: (target, _) = position.addingReportingOverflow(offset)
        case SEEK_END:
            guard let size = size() else { return Int64(mp_averror(ENOSYS)) }
            (target, _) = size.addingReportingOverflow(offset)
        default: return Int64(mp_averror(EINVAL))
        }
        guard target >= 0 else { return Int64(mp_averror(EINVAL)) }
        position = target
        return target
    }
}

private let avioRead: @convention(c) (UnsafeMutableRawPointer?, UnsafeMutablePointer<UInt8>?, Int32) -> Int32 = {
    opaque, buffer, size in
    guard let opaque, let buffer, size > 0 else { return mp_averror(EINVAL) }
    return Unmanaged<AVIOBridge>.fromOpaque(opaque).takeUnretainedValue().read(buffer, size)
}

private let avioSeek: @convention(c) (UnsafeMutableRawPointer?, Int64, Int32) -> Int64 = { opaque, offset, whence in
    guard let opaque else { return Int64(mp_averror(EINVAL)) }
    return Unmanaged<AVIOBridge>.fromOpaque(opaque).takeUnretainedValue().seek(offset, whence)
}

/// FFmpeg's interrupt callback: non-zero stops blocking operations (e.g. in `avformat_find_stream_info`).
let avioInterrupt: @convention(c) (UnsafeMutableRawPointer?) -> Int32 = { opaque in
    guard let opaque else { return 0 }
    return Unmanaged<AVIOBridge>.fromOpaque(opaque).takeUnretainedValue().shouldStop ? 1 : 0
}
