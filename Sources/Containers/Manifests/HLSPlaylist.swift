import ByteSources
import Foundation
import RangeFetch

/// An HLS playlist (RFC 8216) as mprobe uses it: a master playlist lists variants and renditions,
/// a media playlist lists segments. URIs are made absolute against the playlist's own URL (after
/// redirects), so a segment is one cache key wherever it is named from.
package enum HLSPlaylist: Sendable {
    case master(HLSMaster)
    case media(HLSMedia)

    /// Playlists are text of a few kilobytes to a few megabytes (hours of 2 s segments); anything
    /// larger is not one.
    package static let maximumSize: Int64 = 16 << 20

    /// Parses `text`, fetched from `url`. Throws `MediaError.malformedPlaylist` for text that is
    /// not a playlist, and for tags whose values make no sense.
    package static func parse(_ text: String, url: String) throws -> HLSPlaylist {
        // \r\n is one Character in Swift: split on any line break.
        var lines = text.split(omittingEmptySubsequences: true, whereSeparator: \.isNewline)
            .map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }[...]
        guard let first = lines.first, first.drop(while: { $0 == "\u{FEFF}" }) == "#EXTM3U" else {
            throw MediaError.malformedPlaylist(input: url, detail: "it does not start with #EXTM3U")
        }
        lines = lines.dropFirst()
        let isMaster = lines.contains { $0.hasPrefix("#EXT-X-STREAM-INF:") }
        let isMedia = lines.contains { $0.hasPrefix("#EXTINF:") }
        if isMaster && isMedia {
            throw MediaError.malformedPlaylist(
                input: url, detail: "it lists both variants (#EXT-X-STREAM-INF) and segments (#EXTINF)")
        }
        let parser = Parser(url: url)
        return isMaster ? .master(try parser.master(lines)) : .media(try parser.media(lines))
    }

    private struct Parser {
        let url: String

        func master(_ lines: ArraySlice<String>) throws -> HLSMaster {
            var master = HLSMaster()
            var pending: HLSAttributes?
            for line in lines {
                if let value = line.value(of: "#EXT-X-STREAM-INF:") {
                    pending = try attributes(value, tag: "EXT-X-STREAM-INF")
                } else if let value = line.value(of: "#EXT-X-MEDIA:") {
                    let a = try attributes(value, tag: "EXT-X-MEDIA")
                    guard let type = a["TYPE"], let group = a["GROUP-ID"] else {
                        throw MediaError.malformedPlaylist(
                            input: url, detail: "#EXT-X-MEDIA without TYPE or GROUP-ID: \(line)")
                    }
                    master.renditions.append(
                        HLSRendition(
                            type: type, groupID: group, name: a["NAME"], language: a["LANGUAGE"],
                            isDefault: a["DEFAULT"] == "YES", channels: a["CHANNELS"],
                            uri: try a["URI"].map { try resolve($0) }))
                } else if let value = line.value(of: "#EXT-X-SESSION-KEY:") {
                    if let method = try attributes(value, tag: "EXT-X-SESSION-KEY")["METHOD"], method != "NONE" {
                        master.encryption.insert(method)
                    }
                } else if line.hasPrefix("#") {
                    continue  // other tags and comments
                } else if let a = pending {
                    master.variants.append(try variant(a, uri: line))
                    pending = nil
                }
            }
            if pending != nil {
                throw MediaError.malformedPlaylist(input: url, detail: "#EXT-X-STREAM-INF without a URI after it")
            }
            return master
        }

        private func variant(_ a: HLSAttributes, uri: String) throws -> HLSVariant {
            guard let bandwidth = a["BANDWIDTH"].flatMap({ Int($0) }), bandwidth >= 0 else {
                throw MediaError.malformedPlaylist(
                    input: url, detail: "#EXT-X-STREAM-INF without a valid BANDWIDTH for \(uri)")
            }
            let size = a["RESOLUTION"].map { $0.split(separator: "x").compactMap { Int($0) } }
            return HLSVariant(
                uri: try resolve(uri), bandwidth: bandwidth,
                averageBandwidth: a["AVERAGE-BANDWIDTH"].flatMap { Int($0) },
                width: size?.count == 2 ? size?[0] : nil, height: size?.count == 2 ? size?[1] : nil,
                codecs: a["CODECS"], frameRate: a["FRAME-RATE"].flatMap { Double($0) },
                audio: a["AUDIO"], subtitles: a["SUBTITLES"])
        }

        func media(_ lines: ArraySlice<String>) throws -> HLSMedia {
            var media = HLSMedia()
            var duration: Double?
            var range: (length: Int64, offset: Int64?)?
            var map: HLSInitSection?
            var key = "NONE"
            var time = 0.0
            // Where the last byte range of each URI ended: a range without an offset follows it.
            var ends: [String: Int64] = [:]
            for line in lines {
                if let value = line.value(of: "#EXTINF:") {
                    let number = value.prefix { $0 != "," }.trimmingCharacters(in: .whitespaces)
                    // Decimal only (RFC 8216): Swift's Double would also take hexadecimal, "inf" and exponents.
                    guard number.allSatisfy({ $0.isASCII && ($0.isNumber || $0 == ".") }), let seconds = Double(number),
                        seconds.isFinite, seconds >= 0, seconds < 86_400
                    else {
                        throw MediaError.malformedPlaylist(
                            input: url, detail: "a segment duration that is not a number of seconds: \(line)")
                    }
                    duration = seconds
                } else if let value = line.value(of: "#EXT-X-TARGETDURATION:") {
                    media.targetDuration = Double(value)
                } else if let value = line.value(of: "#EXT-X-MEDIA-SEQUENCE:") {
                    media.mediaSequence = Int(value) ?? 0
                } else if let value = line.value(of: "#EXT-X-PLAYLIST-TYPE:") {
                    media.playlistType = value
                } else if line == "#EXT-X-ENDLIST" {
                    media.ended = true
                } else if line == "#EXT-X-I-FRAMES-ONLY" {
                    media.iFramesOnly = true
                } else if let value = line.value(of: "#EXT-X-BYTERANGE:") {
                    range = try byteRange(value)
                } else if let value = line.value(of: "#EXT-X-KEY:") {
                    key = try attributes(value, tag: "EXT-X-KEY")["METHOD"] ?? "NONE"
                    if key != "NONE" { media.encryption.insert(key) }
                } else if let value = line.value(of: "#EXT-X-MAP:") {
                    let a = try attributes(value, tag: "EXT-X-MAP")
                    guard let uri = a["URI"] else {
                        throw MediaError.malformedPlaylist(input: url, detail: "#EXT-X-MAP without a URI")
                    }
                    let resolved = try resolve(uri)
                    map = HLSInitSection(
                        uri: resolved,
                        byteRange: try a["BYTERANGE"].map { value in
                            let r = try byteRange(value)
                            return try span(r, of: resolved, ends: &ends)
                        })
                } else if line.hasPrefix("#") {
                    continue
                } else {
                    guard let seconds = duration else {
                        throw MediaError.malformedPlaylist(
                            input: url, detail: "a segment URI without #EXTINF before it: \(line)")
                    }
                    let resolved = try resolve(line)
                    let bytes = try range.map { try span($0, of: resolved, ends: &ends) }
                    media.segments.append(
                        HLSSegment(
                            uri: resolved, start: time, duration: seconds, byteRange: bytes,
                            initSection: map, encrypted: key != "NONE"))
                    time += seconds
                    (duration, range) = (nil, nil)
                }
            }
            return media
        }

        /// `length[@offset]`; the offset defaults to where the previous range of the same URI ended.
        private func byteRange(_ value: String) throws -> (length: Int64, offset: Int64?) {
            let parts = value.split(separator: "@", omittingEmptySubsequences: false)
            guard parts.count <= 2, let length = Int64(parts[0]), length > 0,
                parts.count == 1 || Int64(parts[1]).map({ $0 >= 0 }) == true
            else {
                throw MediaError.malformedPlaylist(
                    input: url, detail: "a byte range that is not length[@offset]: \(value)")
            }
            return (length, parts.count == 2 ? Int64(parts[1]) : nil)
        }

        private func span(
            _ range: (length: Int64, offset: Int64?), of uri: String, ends: inout [String: Int64]
        ) throws -> Range<Int64> {
            guard let start = range.offset ?? ends[uri] else {
                throw MediaError.malformedPlaylist(
                    input: url, detail: "a byte range without an offset for the first range of \(uri)")
            }
            let (end, overflow) = start.addingReportingOverflow(range.length)
            guard !overflow, end <= ResponseInfo.maxResourceSize else {
                throw MediaError.malformedPlaylist(input: url, detail: "a byte range past any file in \(uri)")
            }
            ends[uri] = end
            return start..<end
        }

        private func attributes(_ text: String, tag: String) throws -> HLSAttributes {
            guard let parsed = HLSAttributes(text) else {
                throw MediaError.malformedPlaylist(
                    input: url, detail: "#\(tag) has a malformed attribute list: \(text)")
            }
            return parsed
        }

        private func resolve(_ reference: String) throws -> String {
            try StreamURL.resolve(reference, against: url, in: url)
        }
    }
}

/// `KEY=VALUE,KEY="quoted, with commas"`: quoted values without their quotes.
package struct HLSAttributes: Sendable {
    private var values: [String: String] = [:]

    init?(_ text: String) {
        var rest = Substring(text)
        while !rest.isEmpty {
            guard let equals = rest.firstIndex(of: "=") else { return nil }
            let key = rest[..<equals].trimmingCharacters(in: .whitespaces)
            rest = rest[rest.index(after: equals)...]
            let value: Substring
            if rest.first == "\"" {
                guard let close = rest.dropFirst().firstIndex(of: "\"") else { return nil }
                value = rest[rest.index(after: rest.startIndex)..<close]
                rest = rest[rest.index(after: close)...]
            } else {
                let end = rest.firstIndex(of: ",") ?? rest.endIndex
                value = rest[..<end]
                rest = rest[end...]
            }
            guard !key.isEmpty else { return nil }
            values[key] = String(value).trimmingCharacters(in: .whitespaces)
            rest = rest.drop { $0 == "," || $0 == " " }
        }
    }

    subscript(_ key: String) -> String? { values[key] }
}

package struct HLSMaster: Sendable {
    package var variants: [HLSVariant] = []
    package var renditions: [HLSRendition] = []
    /// Methods of `EXT-X-SESSION-KEY` (AES-128, SAMPLE-AES...).
    package var encryption: Set<String> = []
}

package struct HLSVariant: Sendable {
    package let uri: String
    package let bandwidth: Int
    package let averageBandwidth: Int?
    package let width: Int?
    package let height: Int?
    package let codecs: String?
    package let frameRate: Double?
    /// Group IDs of the renditions that go with it.
    package let audio: String?
    package let subtitles: String?
}

package struct HLSRendition: Sendable {
    package let type: String
    package let groupID: String
    package let name: String?
    package let language: String?
    package let isDefault: Bool
    package let channels: String?
    /// Nil: the rendition is carried in the variant's own segments.
    package let uri: String?
}

package struct HLSMedia: Sendable {
    package var targetDuration: Double?
    var mediaSequence = 0
    /// VOD or EVENT, when stated.
    package var playlistType: String?
    /// `#EXT-X-ENDLIST`: no segment will be added. Without it the playlist is live.
    package var ended = false
    var iFramesOnly = false
    package var encryption: Set<String> = []
    package var segments: [HLSSegment] = []

    package init() {}

    package var isLive: Bool { !ended && playlistType != "VOD" }
    package var duration: Double { segments.last.map { $0.start + $0.duration } ?? 0 }

    /// The segments that hold [from, to): the one containing `from` to the one containing the
    /// last instant before `to`.
    package func segments(from: Double, to: Double) -> ArraySlice<HLSSegment> {
        guard let first = segments.lastIndex(where: { $0.start <= from }) ?? (segments.isEmpty ? nil : 0) else {
            return []
        }
        var last = first
        while last + 1 < segments.count && segments[last + 1].start < to { last += 1 }
        return segments[first...last]
    }
}

package struct HLSInitSection: Sendable, Hashable {
    package let uri: String
    package let byteRange: Range<Int64>?

    package init(uri: String, byteRange: Range<Int64>?) { (self.uri, self.byteRange) = (uri, byteRange) }
}

package struct HLSSegment: Sendable {
    package let uri: String
    /// Seconds from the playlist's first segment, by the durations it states.
    package let start: Double
    package let duration: Double
    /// The part of `uri` that holds it (`EXT-X-BYTERANGE`); nil for the whole resource.
    package let byteRange: Range<Int64>?
    package let initSection: HLSInitSection?
    package let encrypted: Bool

    package init(
        uri: String, start: Double, duration: Double, byteRange: Range<Int64>?, initSection: HLSInitSection?,
        encrypted: Bool
    ) {
        (self.uri, self.start, self.duration, self.byteRange) = (uri, start, duration, byteRange)
        (self.initSection, self.encrypted) = (initSection, encrypted)
    }
}

private extension String {
    /// What follows `tag` when the line starts with it.
    func value(of tag: String) -> String? { hasPrefix(tag) ? String(dropFirst(tag.count)) : nil }
}
