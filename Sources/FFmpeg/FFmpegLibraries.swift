import CFFmpeg
import Foundation
import Synchronization

/// FFmpeg's functions: `ff.avcodec_get_name(id)`. mprobe is not linked against FFmpeg (see
/// CFFmpeg.h: commands that never demux start without loading it); the table is filled on first
/// use. Every path into FFmpeg starts where `FFmpegLibraries.require()` is called first
/// (`FormatContext.init`, `Encoder.init`), which turns missing libraries into an error a person can
/// act on, and `FFmpegError` does not call in without them: no input reaches the stop below, only
/// a new path into FFmpeg that skipped `require()`, which is a bug.
let ff: mp_ffmpeg = {
    switch FFmpegLibraries.loading {
    case .success(let table): return table
    case .failure(let error): fatalError(error.description)
    }
}()

public enum FFmpegLibraries {
    /// The outcome of opening the libraries, once per process (`mp_ffmpeg_load` is thread-safe).
    static let loading: Result<mp_ffmpeg, FFmpegUnavailable> = {
        defer { settled.store(true, ordering: .releasing) }
        var why = [CChar](repeating: 0, count: 512)
        guard let table = mp_ffmpeg_load(&why, why.count) else {
            let bytes = why.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }
            return .failure(FFmpegUnavailable(reason: String(decoding: bytes, as: UTF8.self)))
        }
        return .success(table.pointee)
    }()

    /// `loading` has its value: asking for it no longer waits.
    private static let settled = Atomic<Bool>(false)

    /// Starts loading the libraries on a thread of their own unless done already, so that the
    /// ~25 ms it takes overlaps the round trips of the box walk that precede libavformat's first
    /// call; `require()` then waits only for what is left of it.
    package static func loadInBackground() {
        guard !settled.load(ordering: .acquiring) else { return }
        Thread.detachNewThread { _ = loading }
    }

    /// The libraries are loaded (without loading them).
    static var available: Bool {
        guard settled.load(ordering: .acquiring), case .success = loading else { return false }
        return true
    }

    /// Loads FFmpeg's libraries unless done already; throws when they cannot be.
    public static func require() throws {
        _ = try loading.get()
    }
}

/// FFmpeg's shared libraries are missing or not the versions mprobe was built with.
public struct FFmpegUnavailable: Error, CustomStringConvertible {
    public let reason: String

    public var description: String {
        "FFmpeg's libraries could not be loaded (\(reason)); install the FFmpeg runtime libraries mprobe was built with (libavformat, libavcodec, libavutil, libswscale)"
    }
}
