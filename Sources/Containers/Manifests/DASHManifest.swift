import ByteSources
import Foundation
import RangeFetch

/// A DASH manifest (MPD) read into the same model as an HLS master playlist, so that probe,
/// prefetch, check and thumbs treat both alike: each video Representation a variant, each audio
/// Representation a rendition of the group "audio", each with the list of its segments from its
/// `SegmentTemplate` (by `$Number$` or `$Time$`, with or without a `SegmentTimeline`), its
/// `SegmentList`, or its `SegmentBase` (whose `sidx` is read when a job needs the segments).
/// A Representation has no URL of its own: it is named `MPD-URL#representation=ID`.
package enum DASHManifest {
    /// A Representation of one file whose `sidx` (at `index`) lists its segments.
    package struct IndexedFile: Sendable {
        package let url: String
        package let initialization: Range<Int64>?
        package let index: Range<Int64>
        package let live: Bool
    }

    package enum Media: Sendable {
        case listed(HLSMedia)
        case indexed(IndexedFile)
    }

    /// The most segments a Representation may list (a day of 0.1 s segments).
    static let maximumSegments = 1_000_000

    package static func parse(_ text: String, url: String) throws -> (HLSMaster, [String: Media]) {
        func malformed(_ detail: String) -> MediaError { MediaError.malformedPlaylist(input: url, detail: detail) }
        let root: MarkupElement
        do { root = try MarkupElement.parse(text) } catch let e as MarkupElement.Malformed {
            throw malformed("not well-formed XML: \(e.detail)")
        }
        guard root.name == "MPD" else { throw malformed("its root element is <\(root.name)>, not <MPD>") }
        let live = root["type"] == "dynamic"
        let periods = root.all("Period")
        guard let period = periods.first else { throw malformed("an MPD without a Period") }
        guard periods.count == 1 else {
            throw MediaError.unsupportedStream(
                input: url, detail: "an MPD of \(periods.count) Periods: mprobe reads single-Period manifests")
        }
        let periodStart = try duration(period["start"], url: url) ?? 0
        let periodSeconds =
            try duration(period["duration"], url: url)
            ?? (try duration(root["mediaPresentationDuration"], url: url)).map { $0 - periodStart }
        let manifestBase = try resolve(root.child("BaseURL")?.text, against: url, url: url) ?? url
        let periodBase = try resolve(period.child("BaseURL")?.text, against: manifestBase, url: url) ?? manifestBase

        var master = HLSMaster()
        var media: [String: Media] = [:]
        var video: [HLSVariant] = [], text: [HLSRendition] = []
        var audio: [(rendition: HLSRendition, bandwidth: Int)] = []
        for (a, set) in period.all("AdaptationSet").enumerated() {
            let setBase = try resolve(set.child("BaseURL")?.text, against: periodBase, url: url) ?? periodBase
            for (r, rep) in set.all("Representation").enumerated() {
                let mime = rep["mimeType"] ?? set["mimeType"] ?? ""
                let kind = set["contentType"] ?? rep["contentType"] ?? String(mime.split(separator: "/").first ?? "")
                guard ["video", "audio", "text", "application"].contains(kind) else { continue }  // image tiles and the like
                if !(set.all("ContentProtection") + rep.all("ContentProtection")).isEmpty {
                    master.encryption.insert("cenc")
                }
                let id = rep["id"] ?? "\(a).\(r)"
                let uri =
                    url.split(separator: "#", maxSplits: 1).first.map(String.init).map {
                        $0 + "#representation="
                            + (id.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? id)
                    } ?? url
                let base = try resolve(rep.child("BaseURL")?.text, against: setBase, url: url) ?? setBase
                let context = Context(
                    manifest: url, base: base, id: id, bandwidth: Int(rep["bandwidth"] ?? "") ?? 0,
                    periodSeconds: periodSeconds, live: live)
                media[uri] = try segments(of: rep, in: set, context: context)
                let codecs = rep["codecs"] ?? set["codecs"]
                switch kind {
                case "video":
                    video.append(
                        HLSVariant(
                            uri: uri, bandwidth: context.bandwidth, averageBandwidth: nil,
                            width: Int(rep["width"] ?? set["width"] ?? ""),
                            height: Int(rep["height"] ?? set["height"] ?? ""),
                            codecs: codecs, frameRate: rate(rep["frameRate"] ?? set["frameRate"]), audio: nil,
                            subtitles: nil))
                case "audio":
                    let channels = (rep.child("AudioChannelConfiguration") ?? set.child("AudioChannelConfiguration"))?[
                        "value"]
                    audio.append(
                        (
                            HLSRendition(
                                type: "AUDIO", groupID: "audio", name: rep["label"] ?? set["label"] ?? id,
                                language: set["lang"] ?? rep["lang"], isDefault: false, channels: channels, uri: uri),
                            context.bandwidth
                        ))
                default:
                    text.append(
                        HLSRendition(
                            type: "SUBTITLES", groupID: "text", name: set["label"] ?? id,
                            language: set["lang"] ?? rep["lang"], isDefault: false, channels: nil, uri: uri))
                }
            }
        }
        // Audio with video: a group the variants play with, its best Representation the default.
        if video.isEmpty {
            master.variants = audio.map {
                HLSVariant(
                    uri: $0.rendition.uri ?? url, bandwidth: $0.bandwidth, averageBandwidth: nil,
                    width: nil, height: nil, codecs: nil, frameRate: nil, audio: nil, subtitles: nil)
            }
        } else {
            let best = audio.indices.max { audio[$0].bandwidth < audio[$1].bandwidth }
            master.renditions =
                audio.enumerated().map { i, a in
                    let r = a.rendition
                    return HLSRendition(
                        type: r.type, groupID: r.groupID, name: r.name, language: r.language, isDefault: i == best,
                        channels: r.channels, uri: r.uri)
                } + text
            master.variants = video.map { v in
                HLSVariant(
                    uri: v.uri, bandwidth: v.bandwidth, averageBandwidth: nil, width: v.width, height: v.height,
                    codecs: v.codecs,
                    frameRate: v.frameRate, audio: audio.isEmpty ? nil : "audio", subtitles: text.isEmpty ? nil : "text"
                )
            }
        }
        guard !master.variants.isEmpty else { throw malformed("no video or audio Representation") }
        return (master, media)
    }

    private struct Context {
        let manifest: String
        let base: String
        let id: String
        let bandwidth: Int
        let periodSeconds: Double?
        let live: Bool
    }

    /// The segment information a Representation uses: its own (whichever kind), else its
    /// AdaptationSet's — a Representation's SegmentBase wins over its set's SegmentTemplate.
    static func segmentInformation(of rep: MarkupElement, in set: MarkupElement) -> MarkupElement? {
        let kinds = ["SegmentTemplate", "SegmentList", "SegmentBase"]
        return kinds.lazy.compactMap { rep.child($0) }.first ?? kinds.lazy.compactMap { set.child($0) }.first
    }

    private static func segments(of rep: MarkupElement, in set: MarkupElement, context c: Context) throws -> Media {
        let url = c.manifest
        let information = segmentInformation(of: rep, in: set)
        if let template = information, template.name == "SegmentTemplate" {
            var attributes = set.child("SegmentTemplate")?.attributes ?? [:]
            attributes.merge(rep.child("SegmentTemplate")?.attributes ?? [:]) { $1 }
            let timeline =
                (rep.child("SegmentTemplate") ?? template).child("SegmentTimeline")
                ?? set.child("SegmentTemplate")?.child("SegmentTimeline")
            return .listed(try templated(attributes, timeline: timeline, context: c))
        }
        if let list = information, list.name == "SegmentList" {
            let timescale = Double(
                try number(list.attributes, "timescale", in: 1...Int64(UInt32.max), absent: 1, url: url))
            let stated = try number(list.attributes, "duration", in: 0...maximumTime, absent: 0, url: url)
            let each = stated > 0 ? Double(stated) / timescale : nil
            let initialization = try list.child("Initialization").map { i in
                HLSInitSection(
                    uri: try resolve(i["sourceURL"], against: c.base, url: url) ?? c.base,
                    byteRange: try range(i["range"], url: url))
            }
            var result = HLSMedia()
            var time = 0.0
            guard list.all("SegmentURL").count <= maximumSegments else {
                throw MediaError.malformedPlaylist(
                    input: url, detail: "more than \(maximumSegments) segments in a Representation")
            }
            for s in list.all("SegmentURL") {
                let seconds = each ?? (c.periodSeconds ?? 0) / Double(max(1, list.all("SegmentURL").count))
                result.segments.append(
                    HLSSegment(
                        uri: try resolve(s["media"], against: c.base, url: url) ?? c.base, start: time,
                        duration: seconds, byteRange: try range(s["mediaRange"], url: url),
                        initSection: initialization, encrypted: false))
                time += seconds
            }
            return .listed(finish(result, live: c.live))
        }
        if let base = information, base.name == "SegmentBase", let index = try range(base["indexRange"], url: url) {
            return .indexed(
                IndexedFile(
                    url: c.base, initialization: try range(base.child("Initialization")?["range"], url: url),
                    index: index, live: c.live))
        }
        // One file, no index: a single segment.
        var single = HLSMedia()
        single.segments = [
            HLSSegment(
                uri: c.base, start: 0, duration: c.periodSeconds ?? 0, byteRange: nil, initSection: nil,
                encrypted: false)
        ]
        return .listed(finish(single, live: c.live))
    }

    /// Segments from a `SegmentTemplate`: its `SegmentTimeline`, or `duration` segments over the Period.
    /// A whole number attribute in `range`; absent: `absent`. Anything else is the manifest's fault.
    private static func number(
        _ a: [String: String], _ name: String, in range: ClosedRange<Int64>, absent: Int64, url: String
    ) throws -> Int64 {
        guard let text = a[name] else { return absent }
        guard let value = Int64(text), range.contains(value) else {
            throw MediaError.malformedPlaylist(
                input: url, detail: "\(name)=\"\(text)\" is not a number in \(range.lowerBound)...\(range.upperBound)")
        }
        return value
    }

    /// The widest `%0Nd` a template number may ask for (a 64-bit number has 20 digits).
    static let maximumWidth = 20

    /// Times in a timescale stay below this (2^50: centuries at 90 kHz), so sums cannot overflow.
    static let maximumTime: Int64 = 1 << 50

    private static func templated(
        _ a: [String: String], timeline: MarkupElement?, context c: Context
    ) throws -> HLSMedia {
        let url = c.manifest
        let timescale = try number(a, "timescale", in: 1...Int64(UInt32.max), absent: 1, url: url)
        let offset = try number(a, "presentationTimeOffset", in: 0...maximumTime, absent: 0, url: url)
        let firstNumber = try number(a, "startNumber", in: 0...maximumTime, absent: 1, url: url)
        guard let mediaTemplate = a["media"] else {
            throw MediaError.malformedPlaylist(input: url, detail: "a SegmentTemplate without media")
        }
        for template in [mediaTemplate, a["initialization"] ?? ""] where template.contains("%0") {
            let widths = template.split(separator: "%").dropFirst().compactMap { Int($0.prefix { $0.isNumber }) }
            if let width = widths.max(), width > maximumWidth {
                throw MediaError.malformedPlaylist(
                    input: url, detail: "a template number %0\(width)d wider than \(maximumWidth) digits")
            }
        }
        let initialization = try a["initialization"].map { template in
            HLSInitSection(
                uri: try resolve(expand(template, c, number: nil, time: nil), against: c.base, url: url) ?? c.base,
                byteRange: nil)
        }
        var times: [(time: Int64, duration: Int64)] = []
        if let timeline {
            let end = c.periodSeconds.map { Int64($0 * Double(timescale)) + offset }
            let entries = timeline.all("S")
            var next: Int64 = 0
            for (i, s) in entries.enumerated() {
                let d = try number(s.attributes, "d", in: 1...maximumTime, absent: 0, url: url)
                guard d > 0 else {
                    throw MediaError.malformedPlaylist(input: url, detail: "a timeline entry without a duration")
                }
                var t = try number(s.attributes, "t", in: 0...maximumTime, absent: next, url: url)
                guard t >= next else {
                    throw MediaError.malformedPlaylist(
                        input: url, detail: "its timeline goes back in time (t=\(t) after \(next))")
                }
                var repeats = try number(s.attributes, "r", in: -1...Int64(Int32.max), absent: 0, url: url)
                if repeats < 0 {
                    // Up to the next entry's time, or the Period's end.
                    let following =
                        i + 1 < entries.count
                        ? try number(entries[i + 1].attributes, "t", in: 0...maximumTime, absent: -1, url: url) : -1
                    let until = following >= 0 ? following : end ?? t + d
                    repeats = max(0, (until - t + d - 1) / d - 1)
                }
                for _ in 0...repeats {
                    // The Period ends the timeline (a repeat count may claim more).
                    if let end, t >= end { break }
                    guard times.count < maximumSegments else {
                        throw MediaError.malformedPlaylist(
                            input: url, detail: "more than \(maximumSegments) segments in a Representation")
                    }
                    times.append((t, d))
                    t += d
                }
                next = t
            }
        } else if let d = Optional(try number(a, "duration", in: 0...maximumTime, absent: 0, url: url)), d > 0,
            let seconds = c.periodSeconds
        {
            let count = (seconds * Double(timescale) / Double(d)).rounded(.up)
            guard count <= Double(maximumSegments) else {
                throw MediaError.malformedPlaylist(
                    input: url, detail: "more than \(maximumSegments) segments in a Representation")
            }
            times = (0..<max(0, Int64(count))).map { (offset + $0 * d, d) }
        }
        // (A template without a timeline or a Period length lists none: live, they follow the clock.)
        var result = HLSMedia()
        for (i, entry) in times.enumerated() {
            let uri = expand(mediaTemplate, c, number: firstNumber + Int64(i), time: entry.time)
            let start = Double(entry.time - offset) / Double(timescale)
            var seconds = Double(entry.duration) / Double(timescale)
            // Fixed-duration segments: the last ends with the Period.
            if timeline == nil, let period = c.periodSeconds { seconds = min(seconds, max(0.001, period - start)) }
            result.segments.append(
                HLSSegment(
                    uri: try resolve(uri, against: c.base, url: url) ?? c.base, start: start,
                    duration: seconds, byteRange: nil, initSection: initialization, encrypted: false))
        }
        return finish(result, live: c.live)
    }

    private static func finish(_ media: HLSMedia, live: Bool) -> HLSMedia {
        var media = media
        media.ended = !live
        media.playlistType = live ? nil : "VOD"
        media.targetDuration = media.segments.map(\.duration).max()
        return media
    }

    /// `$RepresentationID$`, `$Bandwidth$`, `$Number$`, `$Time$` (the last two with an optional
    /// `%0Nd` width) and `$$` replaced.
    private static func expand(_ template: String, _ c: Context, number: Int64?, time: Int64?) -> String {
        var out = ""
        var rest = Substring(template)
        while let open = rest.firstIndex(of: "$") {
            out += rest[..<open]
            let after = rest.index(after: open)
            guard let close = rest[after...].firstIndex(of: "$") else { out += rest[open...]; return out }
            let tag = rest[after..<close]
            let (name, format) = tag.firstIndex(of: "%").map { (tag[..<$0], String(tag[$0...])) } ?? (tag, "")
            func formatted(_ v: Int64) -> String {
                // A width beyond any number's (%0999999d would make a megabyte of zeros) is the number's own.
                let width = min(20, Int(format.dropFirst().drop { $0 == "0" }.dropLast()) ?? 0)
                let digits = String(v)
                return format.hasPrefix("%0") && digits.count < width
                    ? String(repeating: "0", count: width - digits.count) + digits : digits
            }
            switch name {
            case "": out += "$"
            case "RepresentationID": out += c.id
            case "Bandwidth": out += formatted(Int64(c.bandwidth))
            case "Number": out += number.map(formatted) ?? ""
            case "Time": out += time.map(formatted) ?? ""
            default: out += rest[open...close]
            }
            rest = rest[rest.index(after: close)...]
        }
        return out + rest
    }

    /// `reference` against `base`, nil when there is none (`StreamURL.resolve`).
    static func resolve(_ reference: String?, against base: String, url: String) throws -> String? {
        guard let reference = reference?.trimmingCharacters(in: .whitespacesAndNewlines), !reference.isEmpty else {
            return nil
        }
        return try StreamURL.resolve(reference, against: base, in: url)
    }

    /// `first-last` (inclusive) as a range.
    static func range(_ text: String?, url: String) throws -> Range<Int64>? {
        guard let text else { return nil }
        let parts = text.split(separator: "-").map { Int64($0.trimmingCharacters(in: .whitespaces)) }
        guard parts.count == 2, let first = parts[0], let last = parts[1], first >= 0, last >= first else {
            throw MediaError.malformedPlaylist(input: url, detail: "a byte range that is not first-last: \(text)")
        }
        guard last < ResponseInfo.maxResourceSize else {
            throw MediaError.malformedPlaylist(input: url, detail: "a byte range past any file: \(text)")
        }
        return first..<last + 1
    }

    /// `30`, `30000/1001`.
    static func rate(_ text: String?) -> Double? {
        guard let text else { return nil }
        let parts = text.split(separator: "/").compactMap { Double($0) }
        guard let first = parts.first else { return nil }
        return parts.count == 2 && parts[1] > 0 ? first / parts[1] : first
    }

    /// An ISO 8601 duration as MPDs write them: `PT1H2M3.5S`, `P1DT2H`.
    static func duration(_ text: String?, url: String) throws -> Double? {
        guard let text else { return nil }
        guard text.hasPrefix("P") else {
            throw MediaError.malformedPlaylist(input: url, detail: "a duration that is not ISO 8601: \(text)")
        }
        var seconds = 0.0, number = "", inTime = false
        for ch in text.dropFirst() {
            switch ch {
            case "T": inTime = true
            case "0"..."9", ".": number.append(ch)
            default:
                guard let value = Double(number) else {
                    throw MediaError.malformedPlaylist(input: url, detail: "a malformed duration: \(text)")
                }
                switch (ch, inTime) {
                case ("D", false): seconds += value * 86_400
                case ("H", true): seconds += value * 3600
                case ("M", true): seconds += value * 60
                case ("S", true): seconds += value
                default:
                    throw MediaError.malformedPlaylist(input: url, detail: "a duration mprobe does not read: \(text)")
                }
                number = ""
            }
        }
        guard seconds.isFinite, seconds < 1e9 else {
            throw MediaError.malformedPlaylist(input: url, detail: "a duration out of range: \(text)")
        }
        return seconds
    }
}
