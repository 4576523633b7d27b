import ByteSources
import Caching
import Containers
import FFmpeg
import Foundation

/// One thumbnail: the time asked for, the time of the frame shown, and the encoded picture.
public struct Thumbnail: Sendable {
    public let time: Double
    public let pts: Double
    public let width: Int
    public let height: Int
    public let encoded: [UInt8]
    public let fileName: String
    /// Its place on a sprite sheet, with `ThumbnailOptions.sprite`.
    public var sprite: SpriteCell?
    /// With `ThumbnailOptions.skipBlack`: the time of the blank key frame this one replaced.
    public var skippedBlank: Double? = nil
    /// With `ThumbnailOptions.skipBlack`: the picture is blank, and nothing near replaced it.
    var blank = false
}

public struct ThumbnailSet: Sendable {
    public let input: String
    /// Seconds, when the container states it.
    public let duration: Double?
    public let thumbnails: [Thumbnail]
    /// The encoded sprite sheets, in order, with `ThumbnailOptions.sprite`.
    public let sprites: [SpriteSheet]
    /// Things to tell the user (times clamped to the end, no index...).
    public let notes: [String]
    /// The storyboards to write beside the sheets.
    public var storyboards: Set<StoryboardFormat> = [.vtt]
    /// The moov (or header) plus the key frames decoded: the least the job needs to move.
    public let floorBytes: Int64
    public let fetch: SourceCounters

    /// The WebVTT storyboard pointing into `sprites`; nil without sheets (or when not asked for).
    public var storyboard: String? { storyboards.contains(.vtt) ? Storyboard.vtt(thumbnails, duration: duration) : nil }
}

/// Thumbnails from key frames: plan the frames from the index, fetch every range they need in
/// one parallel wave, then decode from the cache — never fetch-decode-fetch.
public struct Thumbnailer: Sendable {
    public var options = ThumbnailOptions()
    /// The wave's parallel requests: one per key frame range up to this. Each range is a round trip
    /// a connection pays in turn, so on a slow link fewer connections cost whole round trips (10
    /// thumbnails over 4 connections: 3 in a row); the bytes are the same either way.
    public var connections = 16

    public init() {}

    /// Runs on one version of the resource: if it changes while the thumbnails are made, they are
    /// made again from the new version (`MediaSession.onOneVersion`). `progress` may then count twice.
    public func make(
        _ input: String, session: MediaSession, progress: @Sendable (Int) -> Void = { _ in }
    ) throws -> ThumbnailSet {
        try session.onOneVersion { try makeOnce(input, session: session, progress: progress) }
    }

    private func makeOnce(
        _ input: String, session: MediaSession, progress: @Sendable (Int) -> Void
    ) throws -> ThumbnailSet {
        // The header alone: decoders get what they need from the codec parameters. A long fragmented
        // MP4 with an mfra: its first fragment, and the key frames from the mfra (FragmentKeyFrames).
        // A fragmented MP4 without an index: the first fragment, and the key frames found by
        // FragmentScan (decoded from their bytes); --accurate needs the frames after them too.
        let source = try session.open(input)
        var opened: OpenedInput
        switch try OpenedInput.open(
            source: source, session: session, findStreamInfo: false,
            fragments: options.accurate ? .throughIndex(oneStream: true) : .keyFrames)
        {
        case .media(let media): opened = media
        case .stream: return try makeStream(input, session: session, opened: source, progress: progress)
        }
        var sheets: SpriteSheets?
        let pass: Pass
        var cost = SourceCounters()
        switch try thumbnails(opened, session: session, sheets: &sheets, progress: progress) {
        case .made(let made):
            pass = made
        case .unplaced:
            // The sheets start over, and libavformat tries the frames after each key frame too.
            cost = opened.cost
            sheets = nil
            opened = try OpenedInput.open(
                source: session.open(input), session: session, findStreamInfo: false, fragments: .everyChained
            )
            .media()
            guard case .made(let made) = try thumbnails(opened, session: session, sheets: &sheets, progress: progress)
            else {
                throw MediaError.malformed(
                    input: source.input, detail: "its key frames could not be found, even reading every moof")
            }
            pass = made
        }
        try sheets?.finish()
        var set = ThumbnailSet(
            input: opened.source.input, duration: pass.duration, thumbnails: pass.made, sprites: sheets?.sheets ?? [],
            notes: pass.notes, floorBytes: pass.floor, fetch: cost.adding(opened.cost))
        set.storyboards = options.storyboards
        return set
    }

    /// What one input gave: its thumbnails, notes, the bytes they needed, its duration.
    struct Pass {
        let made: [Thumbnail]
        let notes: [String]
        let floor: Int64
        let duration: Double?
    }

    /// A pass's thumbnails, or word that a fragmented MP4's key frames, to be found from their
    /// bytes (`FragmentScan`), could not be: not found within its reads, or one that does not
    /// decode alone. libavformat then reads every moof instead (`.everyChained`).
    enum PassResult {
        case made(Pass)
        case unplaced
    }

    /// The thumbnails of one opened input, at the options' times or at `given` (seconds from its
    /// start: a stream's segment), reported `shift` seconds later; pictures go on `sheets` (made
    /// here for `total` thumbnails, or as many as this input gives, when the job has none yet).
    func thumbnails(
        _ opened: OpenedInput, session: MediaSession, times given: [Double]? = nil, shift: Double = 0,
        total: Int? = nil, sheets: inout SpriteSheets?, progress: (Int) -> Void
    ) throws -> PassResult {
        let (source, context) = (opened.source, opened.context)
        guard let video = context.bestStream(.video) else {
            throw MediaError.noTracks(detail: "\(source.input) has no video track to take thumbnails from")
        }
        let index = opened.seekIndex
        do { try index.learnTimes(of: video, timesGiven: given != nil) } catch { throw opened.explain(error) }
        let entries = context.indexEntries(stream: video)
        let duration = try index.duration(of: video)
        if duration == nil, given == nil, options.spreadsOverTheDuration {
            throw MediaError.noTimeline(
                input: source.input,
                detail: "\(context.formatName) with no index and no duration here: "
                    + "--count and --every have nothing to spread over; give times with --at")
        }
        // Times count from the container's start; a stream's segment counts from its first key frame
        // (a fragment's times run on from the stream's start, which its container does not state).
        let offset = given == nil ? context.startTime : entries.first(where: \.isKeyframe)?.time ?? context.startTime
        // For each requested time: the key frame at or before it (clamped to the last one).
        let times = given ?? options.requestedTimes(duration: duration ?? 0)
        let found = try index.keyFrames(
            KeyFrameQuery(
                video: video, requested: times, offset: offset, duration: duration, connections: connections,
                cancellation: session.cancellation))
        guard case .found(let keys) = found else { return .unplaced }
        var notes = keys.cut.map { [$0] } ?? []
        if given == nil, let note = options.limitNote(duration: duration ?? 0) { notes.append(note) }
        for time in times where duration.map({ time >= $0 }) == true {
            notes.append(
                String(format: "%.3f s is past the end (%.3f s): using the last key frame", time, duration ?? 0))
        }
        notes += keys.notes
        let targets = Array(zip(times, keys.chosen)).map { (time: $0.0, keyframe: $0.1) }
        if keys.listed.isEmpty, given == nil, !index.placesSeeks(of: video) {
            notes.append("\(context.formatName) has no index here: frames are found by seeking")
        }

        // One wave: every range the decodes below will read, merged, fetched in parallel.
        var needed = ByteRangeSet()
        for target in targets {
            guard let key = target.keyframe else { continue }
            needed.insert(key.byteRange)
            if options.accurate {
                for e in entries where e.time > key.time && e.time <= offset + target.time {
                    needed.insert(e.byteRange)
                }
                // In a fragment no index lists: the frames up to the next key frame, its whole run.
                if let end = keys.fragmentEnd(of: key) {
                    needed.insert(key.position..<end)
                }
            }
        }
        var floor = needed
        floor.formUnion(context.bytesRead)  // the first request may already hold the first key frame
        let wave = Prefetcher.merge(needed.ranges, gap: PrefetchPlanner.mergeGap).flatMap {
            source.missingRanges(in: $0)
        }
        var prefetcher = Prefetcher()
        prefetcher.connections = connections
        try prefetcher.fetch(wave, source: source, cancellation: session.cancellation)

        let decoder = try FrameDecoder(context, stream: video, threading: options.accurate ? .all : .sliceOnly)
        context.discardAllStreams(except: video)
        let scaler = Scaler()
        if sheets == nil, let layout = options.sprite {
            sheets = SpriteSheets(
                layout: layout, count: total ?? targets.count, quality: options.quality,
                uniform: options.storyboards != [.vtt])
        }
        // A stream's segment starts with a key frame: from its start is where its times come from.
        func startsTheFile(_ key: IndexEntry?, time: Double) -> Bool {
            given != nil || (key.map { $0 == keys.listed.first } ?? (time < 1))
        }
        var made: [Thumbnail] = []
        var done: [Int64: Thumbnail] = [:]  // by key frame position: one decode per key frame
        // A sheet needs the picture of a repeated key frame again: the last one is kept (times
        // mostly come in order); an earlier one is decoded again rather than keeping every picture.
        var last: (position: Int64, image: RGBImage)?
        for (i, target) in targets.enumerated() {
            if session.cancellation.isCancelled { throw MediaError.interrupted }
            let name = Thumbnailer.fileName(time: target.time + shift, format: options.format)
            if !options.accurate, let key = target.keyframe, let same = done[key.position] {
                let image = last?.position == key.position ? last?.image : nil
                if sheets == nil || image != nil {
                    let cell = try image.flatMap { try sheets?.add($0) }
                    made.append(
                        Thumbnail(
                            time: target.time + shift, pts: same.pts, width: same.width, height: same.height,
                            encoded: same.encoded, fileName: name, sprite: cell, skippedBlank: same.skippedBlank))
                    progress(i + 1)
                    continue
                }
            }
            // Found by seeking, a time past the end is the end: the seek lands on the last key frame.
            let seekTime = target.keyframe.map { $0.time } ?? offset + min(max(0, target.time), duration ?? .infinity)
            let exact = target.keyframe?.timestamp
            // Alone, a key frame whose bytes are known needs nothing after them: no readahead past.
            source.limitReadahead(to: options.accurate ? nil : target.keyframe?.byteRange.upperBound)
            defer { source.limitReadahead(to: nil) }
            let decoded: (Frame, Double)?
            do {
                decoded =
                    try keys.fromBytes
                    ? target.keyframe.flatMap {
                        try decodeBytes(of: $0, source: source, decoder: decoder, stream: video)
                    }
                    : decodeFrame(
                        context: context, decoder: decoder, stream: video, seekTo: seekTime,
                        timestamp: exact, until: options.accurate ? offset + target.time : nil)
                        ?? decodeFrame(
                            context: context, decoder: decoder, stream: video, seekTo: seekTime, timestamp: exact,
                            until: nil, alone: false)
                        ?? (startsTheFile(target.keyframe, time: target.time)
                            ? decodeFrame(
                                context: context, decoder: decoder, stream: video, seekTo: offset,
                                until: nil, alone: false) : nil)
                        ?? (target.keyframe == nil
                            ? try lastPicture(
                                before: seekTime, from: offset, context: context, decoder: decoder, stream: video)
                            : nil)
            } catch {
                throw opened.explain(error, track: video, seconds: target.time)
            }
            if keys.fromBytes, decoded == nil { return .unplaced }
            guard let (frame, pts) = decoded else {
                // (From the start only for the first key frame, whose picture an edit list may
                // discard, or a segment: elsewhere that gave the first frame for a later time.)
                throw MediaError.malformed(
                    input: source.input, detail: String(format: "no picture decoded at %.3f s", seekTime))
            }
            var (image, shown) = (try picture(frame, context: context, stream: video, scaler: scaler), pts)
            var skipped: Double?
            if options.skipBlack, BlankFrames.isBlank(image) {
                // The next key frames the index lists, a few and not far: the first that shows something.
                let after = keys.candidates.filter {
                    $0.time > (target.keyframe?.time ?? pts) + 1e-6 && $0.time <= pts + BlankFrames.reach
                }
                for candidate in after.prefix(BlankFrames.candidates) {
                    guard
                        let (next, nextPTS) = try decodeFrame(
                            context: context, decoder: decoder, stream: video, seekTo: candidate.time,
                            timestamp: candidate.timestamp, until: nil)
                    else { continue }
                    let candidatePicture = try picture(next, context: context, stream: video, scaler: scaler)
                    if !BlankFrames.isBlank(candidatePicture) {
                        (image, shown, skipped) = (candidatePicture, nextPTS, pts - offset + shift)
                        break
                    }
                }
                if skipped == nil {
                    notes.append(
                        String(
                            format: "%.3f s: the key frame is nearly black or flat, and %@", target.time + shift,
                            after.isEmpty
                                ? "the index lists no key frame soon after it: kept"
                                : "so are the key frames after it: kept"))
                }
            }
            let encoded = try ImageEncoder.encode(image, as: options.format, quality: options.quality)
            var thumbnail = Thumbnail(
                time: target.time + shift, pts: shown - offset + shift, width: image.width, height: image.height,
                encoded: encoded, fileName: name, sprite: try sheets?.add(image), skippedBlank: skipped)
            thumbnail.blank = options.skipBlack && skipped == nil && BlankFrames.isBlank(image)
            if let key = target.keyframe {
                done[key.position] = thumbnail
                if sheets != nil { last = (key.position, image) }
            }
            made.append(thumbnail)
            progress(i + 1)
        }
        return .made(Pass(made: made, notes: notes, floor: floor.byteCount, duration: duration))
    }

    /// A time found by seeking can land past the last key frame (an MPEG-TS seek is placed by
    /// timestamps, not key frames: 1.4 s before the end gave no picture): the picture of a seek
    /// 2, 4, 8 then 16 s earlier, the first that gives one — the last key frame, as `--at` promises
    /// for a time past the end. Nil when none does.
    private func lastPicture(
        before time: Double, from start: Double, context: FormatContext, decoder: FrameDecoder, stream: Int
    ) throws -> (Frame, Double)? {
        for back in [2.0, 4, 8, 16] where time - back >= start {
            if let found = try decodeFrame(
                context: context, decoder: decoder, stream: stream, seekTo: time - back, until: nil, alone: false)
            {
                return found
            }
        }
        return nil
    }

    /// What a job says of a file that ends inside the key frame at `time`.
    static func cutNote(_ time: Double) -> String {
        String(
            format: "the file ends inside or before the key frame of %.3f s: the last whole one stands for later times",
            time)
    }

    static func fileName(time: Double, format: ImageFormat) -> String {
        let ms = Int((max(0, time) * 1000).rounded())
        return String(format: "thumb-%06d.%03d.", ms / 1000, ms % 1000) + format.rawValue
    }

    /// Seeks to the key frame at `seekTo` and decodes it `alone` (sent, then drained, so one packet
    /// gives one picture), or with `until` every frame up to that time, returning the last. Not
    /// alone, it decodes onward until the first picture: the fallback for a key frame that gives
    /// none (a pre-roll frame an edit list discards). Nil when no picture came out.
    /// `timestamp` is the key frame's index timestamp when known: seeking to it exactly avoids
    /// landing on the previous key frame through rounding.
    private func decodeFrame(
        context: FormatContext, decoder: FrameDecoder, stream: Int, seekTo: Double, timestamp: Int64? = nil,
        until: Double?, alone: Bool = true
    ) throws -> (Frame, Double)? {
        try context.seek(stream: stream, timestamp: timestamp ?? context.timestamp(seekTo, stream: stream))
        decoder.flush()
        let packet = try Packet()
        let result = try Frame()
        var got: Double?
        var packets = 0
        func keep(_ frame: Frame) throws {
            let time = frame.bestEffortTimestamp.map(decoder.seconds) ?? seekTo
            if got == nil || until.map({ time <= $0 + 1e-6 }) == true {
                try result.reference(frame)
                got = time
            }
        }
        while try context.readPacket(into: packet) {
            guard packet.streamIndex == stream else { continue }
            _ = try decoder.decode(packet, keep)
            packets += 1
            if let until {
                if let got, got >= until - 1e-6 { break }
                if let dts = packet.dts, decoder.seconds(dts) > until + 1 { break }
            } else if alone || got != nil || packets >= 300 {
                break  // drained below
            }
        }
        _ = try decoder.decode(nil, keep)
        decoder.flush()
        return got.map { (result, $0) }
    }

    /// Decodes the key frame `entry` from its bytes, as one packet handed to the decoder without
    /// the demuxer: for a fragment libavformat has not read (it could not seek there).
    private func decodeBytes(
        of entry: IndexEntry, source: any MediaSource, decoder: FrameDecoder, stream: Int
    ) throws -> (Frame, Double)? {
        let bytes = try source.bytes(at: entry.position, count: Int(entry.size))
        guard bytes.count == entry.size else { return nil }
        let packet = try Packet(keyFrame: bytes, stream: stream, timestamp: entry.timestamp)
        decoder.flush()
        let result = try Frame()
        var got: Double?
        func keep(_ frame: Frame) throws {
            guard got == nil else { return }
            try result.reference(frame)
            got = frame.bestEffortTimestamp.map(decoder.seconds) ?? entry.time
        }
        _ = try decoder.decode(packet, keep)
        _ = try decoder.decode(nil, keep)
        decoder.flush()
        return got.map { (result, $0) }
    }

    /// The frame at the output size in display orientation: sample aspect ratio and rotation applied.
    private func picture(_ frame: Frame, context: FormatContext, stream: Int, scaler: Scaler) throws -> RGBImage {
        var aspect = frame.sampleAspectRatio ?? context.sampleAspectRatio(stream: stream) ?? 1
        if !(1.0 / 16...16).contains(aspect) { aspect = 1 }  // a damaged SAR must not make a huge picture
        // FFmpeg's display matrix angle is counter-clockwise; players turn the picture back clockwise.
        let clockwise = context.rotation(stream: stream).map { ((Int((-$0).rounded()) % 360) + 360) % 360 } ?? 0
        let sideways = clockwise == 90 || clockwise == 270
        let displayW = Double(frame.width) * aspect, displayH = Double(frame.height)
        let (outW, outH) = options.outputSize(
            displayWidth: sideways ? displayH : displayW,
            displayHeight: sideways ? displayW : displayH)
        let scaled = try scaler.rgb(frame, width: sideways ? outH : outW, height: sideways ? outW : outH)
        return scaled.rotated(clockwise: clockwise)
    }
}
