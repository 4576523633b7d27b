import ByteSources
import Containers
import FFmpeg
import Support

/// Where libavformat's MP3 demuxer and the frame walk meet: the demuxer's seek says where a
/// window starts and at what time, the walk (`MPEGAudioFrames`) where it ends.
extension MPEGAudioFrames {
    /// Fetches what a player of `stream` needs from `start` to `end` (seconds, the container's):
    /// where libavformat's seek lands (a table-of-contents point, synced to a frame) and the time
    /// it gives that frame, from its first packet, then the frames walked from there.
    static func fetchWindow(
        of stream: Int, in context: FormatContext, from start: Double, to end: Double,
        source: any MediaSource, cancellation: Cancellation
    ) throws {
        try context.seek(seconds: start)
        let packet = try Packet()
        for _ in 0..<16 {
            guard try context.readPacket(into: packet) else { return }
            guard packet.streamIndex == stream else { continue }
            guard let position = packet.position, let pts = packet.pts else { return }
            let window = Window(position: position, time: context.seconds(pts, stream: stream), end: end)
            return try fetchThrough(window, source: source, cancellation: cancellation)
        }
    }

    /// A name ending in `.mp3` (the file name libavformat's prober is given) most likely names an MP3.
    static func namesAnMP3(_ input: String) -> Bool { FormatContext.nameHint(input).lowercased().hasSuffix(".mp3") }
}
