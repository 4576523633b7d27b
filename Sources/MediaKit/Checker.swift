import CFFmpeg
import Foundation
import MediaSource

/// "Will it play": demuxes and decodes every packet of a window for the chosen tracks, as a
/// player starting at `start` would, and counts what decoded.
public struct Checker: Sendable {
    public struct TrackResult: Sendable {
        public let index: Int
        public let kind: TrackInfo.Kind
        public let codec: String
        /// Frames decoded whose time falls in the window (video frames before the start, decoded
        /// only because decoding starts at a key frame, are not counted).
        public var frames = 0
        public var packets = 0
        public var errors: [String] = []
        /// Presentation time of the last decoded frame, seconds from the start of the presentation.
        public var lastTime: Double?
        /// The track's packets reached the end of the window (or the end of the file).
        public var complete = false
    }

    public struct Result: Sendable {
        public let input: String
        public let start: Double
        public let seconds: Double
        public let tracks: [TrackResult]
        public let fetch: SourceCounters
        public var ok: Bool { tracks.allSatisfy { $0.errors.isEmpty && $0.complete } }
    }

    public init() {}

    public func check(_ input: String, session: MediaSession, start: Double, seconds: Double,
                      tracks selection: TrackSelection = .defaults) throws -> Result {
        let opened = try OpenedInput(input, session: session, findStreamInfo: true)
        let context = opened.context
        let streams = try selection.streams(in: context)
        let offset = context.startTime
        let windowStart = offset + start, windowEnd = windowStart + seconds
        var results: [Int: TrackResult] = [:]
        var decoders: [Int: Decoder] = [:]
        let delays = Dictionary(uniqueKeysWithValues: streams.map { ($0, context.decodeDelay(stream: $0)) })
        for index in streams {
            guard let st = context.stream(index) else { continue }
            results[index] = TrackResult(index: index, kind: context.kind(ofStream: index), codec: context.codecName(stream: index))
            do {
                decoders[index] = try Decoder(stream: st)
            } catch {
                results[index]?.errors.append("\(error)")
            }
        }
        if start > 0 {
            let target = Int64(windowStart * Double(AV_TIME_BASE))
            try FFmpegError.check(avformat_seek_file(context.pointer, -1, Int64.min, target, target, 0), "avformat_seek_file")
        }
        let packet = try Packet()
        func decoded(_ index: Int, _ frame: UnsafeMutablePointer<AVFrame>, _ decoder: Decoder) {
            let pts = frame.pointee.best_effort_timestamp
            let time = pts == mp_av_nopts_value() ? nil : Double(pts) * Double(decoder.timeBase.num) / Double(decoder.timeBase.den)
            if let time, time < windowStart - 1e-6 { return } // pre-roll from the key frame
            if let time, time >= windowEnd { return }
            results[index]?.frames += 1
            if let time { results[index]?.lastTime = time - offset }
        }
        while results.values.contains(where: { !$0.complete }) {
            packet.unref()
            let rc = av_read_frame(context.pointer, packet.pointer)
            if rc == mp_averror_eof() { break }
            if rc < 0 {
                if let error = context.readError { throw error }
                if session.cancellation.isCancelled { throw MediaError.interrupted }
                throw MediaError.malformed(input: input, detail: FFmpegError(code: rc, function: "av_read_frame").description)
            }
            let index = Int(packet.pointer.pointee.stream_index)
            guard results[index] != nil, results[index]?.complete == false else { continue }
            let st = context.stream(index)!
            let tb = st.pointee.time_base
            // The window ends at the first packet whose decode time, plus the stream's decode delay
            // (as the planner counts it), reaches its end.
            let dts = packet.pointer.pointee.dts
            let ts = dts != mp_av_nopts_value() ? dts + delays[index, default: 0] : packet.pointer.pointee.pts
            if ts != mp_av_nopts_value(), Double(ts) * Double(tb.num) / Double(tb.den) >= windowEnd {
                results[index]?.complete = true
                continue
            }
            results[index]?.packets += 1
            guard let decoder = decoders[index] else { continue }
            if let error = try decoder.decode(packet.pointer, { decoded(index, $0, decoder) }) {
                results[index]?.errors.append(error.description)
            }
        }
        // End of file or of the window: drain what the decoders hold.
        for (index, decoder) in decoders {
            if let error = try decoder.decode(nil, { decoded(index, $0, decoder) }) {
                results[index]?.errors.append(error.description)
            }
            results[index]?.complete = true
        }
        return Result(input: input, start: start, seconds: seconds,
                      tracks: streams.compactMap { results[$0] }, fetch: opened.cost)
    }
}
