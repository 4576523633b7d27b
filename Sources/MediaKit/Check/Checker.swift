import ByteSources
import FFmpeg
import Foundation

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

    /// The variant an HLS stream is checked in (the one `prefetch --variant` kept).
    public var pick = VariantPick.best
    /// How far before the window's end (or the segments' end) a stream's last decoded frame may be.
    static let streamSlack = 0.75

    public init() {}

    /// Runs on one version of the resource: if it changes during the check, the check starts over
    /// on the new version (`MediaSession.onOneVersion`). An HLS playlist is checked as a player
    /// of `pick` reads it: the segments of the window, one after the other (`checkStream`).
    public func check(
        _ input: String, session: MediaSession, start: Double, seconds: Double,
        tracks selection: TrackSelection = .defaults
    ) throws -> Result {
        try session.onOneVersion {
            switch try Checker.open(try session.open(input), session: session) {
            case .media(let opened):
                try PrefetchPlanner.refuseAWindowPastTheEnd(opened, start: start)
                return try checkOnce(opened, session: session, start: start, seconds: seconds, tracks: selection)
            case .stream:
                return try checkStream(input, session: session, start: start, seconds: seconds, tracks: selection)
            }
        }
    }

    /// A media file opened as `check` opens it: a prefetch that reads its window to complete it
    /// (`PrefetchPlanner.readAsAPlayer`) reads what a check will.
    static func open(_ source: any MediaSource, session: MediaSession) throws -> Opened {
        try OpenedInput.open(
            source: source, session: session, findStreamInfo: true, fragments: .throughIndex(oneStream: true))
    }

    /// Each media playlist the variant plays (its own, an audio rendition's) read as a player's
    /// demuxer reads it: the initialization section and the window's segments in a row
    /// (`SpanSource`), checked from the window's start within them. Tracks are numbered across them.
    private func checkStream(
        _ input: String, session: MediaSession, start: Double, seconds: Double,
        tracks selection: TrackSelection
    ) throws -> Result {
        var playlists = StreamPlaylists(session: session)
        let chosen = try StreamSelection.select(input, pick: pick, playlists: &playlists)
        try chosen.checkWindow(input, start: start)
        var tracks: [TrackResult] = []
        for p in chosen.playlists {
            let segments = p.media.segments(from: start, to: start + seconds)
            guard let first = segments.first else { continue }
            let span = try playlists.span(Array(segments), input: p.uri, checkingMedia: true)
            let opened = try StreamPlaylists.open(
                span, session: session, findStreamInfo: true, fragments: .throughIndex(oneStream: true))
            let within = max(0, start - first.start)
            let r = try checkOnce(
                opened, session: session, start: within, seconds: seconds,
                tracks: p.role == "audio" ? .some(indices: [], kinds: [.audio]) : selection, seek: false)
            // The window within what these segments hold: decoding must reach near its end. A
            // playlist's durations can promise more than the segments hold.
            let reach = min(start + seconds, (segments.last.map { $0.start + $0.duration }) ?? start)
            for t in r.tracks {
                var renumbered = TrackResult(index: tracks.count, kind: t.kind, codec: t.codec)
                (renumbered.frames, renumbered.packets, renumbered.errors) = (t.frames, t.packets, t.errors)
                (renumbered.lastTime, renumbered.complete) = (t.lastTime.map { $0 + first.start }, t.complete)
                if reach - start > Checker.streamSlack, (renumbered.lastTime ?? -1) < reach - Checker.streamSlack {
                    renumbered.errors.append(
                        String(
                            format: "decoded up to %@, but the playlist's segments reach %.3f s",
                            renumbered.lastTime.map { String(format: "%.3f s", $0) } ?? "no frame", reach))
                }
                tracks.append(renumbered)
            }
        }
        return Result(input: input, start: start, seconds: seconds, tracks: tracks, fetch: playlists.counters)
    }

    /// `seek: false` reads from the beginning (a stream's segment, which a player reads from its
    /// start) and counts from `start`: libavformat's MPEG-TS seek lands near the time and the
    /// decoder then waits for the next key frame, a second or more later.
    private func checkOnce(
        _ opened: OpenedInput, session: MediaSession, start: Double, seconds: Double,
        tracks selection: TrackSelection, seek: Bool = true
    ) throws -> Result {
        let context = opened.context
        let streams = try selection.streams(in: context)
        let offset = context.startTime
        let windowStart = offset + start, windowEnd = windowStart + seconds
        var results: [Int: TrackResult] = [:]
        var decoders: [Int: FrameDecoder] = [:]
        let end = WindowEnd(windowEnd, streams: streams, in: context)
        for index in streams {
            results[index] = TrackResult(
                index: index, kind: context.kind(ofStream: index), codec: context.codecName(stream: index))
            do {
                decoders[index] = try FrameDecoder(context, stream: index)
            } catch {
                results[index]?.errors.append("\(error)")
            }
        }
        // A track libavformat could not index (damaged sample tables) yields no packets: say why
        // rather than report an empty track as played.
        for index in streams where context.indexEntryCount(stream: index) == 0 {
            if let problem = opened.tableProblem(track: index) { results[index]?.errors.append(problem) }
        }
        if start > 0 && seek {
            do { try context.seek(seconds: windowStart) } catch { throw opened.explain(error, seconds: start) }
        }
        let packet = try Packet()
        func decoded(_ index: Int, _ frame: Frame, _ decoder: FrameDecoder) {
            let time = frame.bestEffortTimestamp.map(decoder.seconds)
            if let time, time < windowStart - 1e-6 { return }  // pre-roll from the key frame
            if let time, time >= windowEnd { return }
            results[index]?.frames += 1
            if let time { results[index]?.lastTime = time - offset }
        }
        while results.values.contains(where: { !$0.complete }) {
            let more: Bool
            do { more = try context.readPacket(into: packet) } catch { throw opened.explain(error) }
            guard more else { break }
            let index = packet.streamIndex
            guard results[index] != nil, results[index]?.complete == false else { continue }
            if end.reached(by: packet, in: context) {
                results[index]?.complete = true
                continue
            }
            results[index]?.packets += 1
            guard let decoder = decoders[index] else { continue }
            if let error = try decoder.decode(packet, { decoded(index, $0, decoder) }) {
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
        return Result(
            input: opened.source.input, start: start, seconds: seconds,
            tracks: streams.compactMap { results[$0] }, fetch: opened.cost)
    }
}
