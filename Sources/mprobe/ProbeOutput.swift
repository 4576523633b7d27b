import ByteSources
import FFmpeg
import Foundation
import MediaKit

/// How a `ProbeResult` is shown to people (`ProbeReport` is the object for programs).
enum ProbeOutput {
    static func human(_ r: ProbeResult, verbose: Bool) -> String {
        var head: [String] = [r.format]
        if let d = r.duration { head.append(clock(d)) }
        if let s = r.size { head.append(Console.humanBytes(s)) }
        if let b = r.bitRate { head.append(kbps(b)) }
        if let layout = r.layout {
            if let moov = layout.moov, let position = layout.moovPosition {
                head.append("moov at \(position.rawValue) (\(Console.humanBytes(moov.size)) at \(moov.offset))")
            }
            if layout.fragmented { head.append("fragmented") }
        }
        var lines = [r.input, "  " + head.joined(separator: " · ")]
        for t in r.tracks { lines.append("  #\(t.index) " + trackLine(t)) }
        lines += costLine(r.fetch, seconds: r.seconds, verbose: verbose)
        return lines.joined(separator: "\n")
    }

    /// An HLS stream: its shape, then each variant (and rendition) with its playlist and, when
    /// probed, its first segment's tracks.
    static func human(_ r: StreamProbeResult, verbose: Bool) -> String {
        var head = [r.format, r.live ? "live" : "VOD"]
        if let d = r.duration { head.append(clock(d)) }
        if r.isMaster { head.append("\(r.variants.count) variant\(r.variants.count == 1 ? "" : "s")") }
        if let p = r.variants.first?.playlist {
            head.append("\(p.segments) segments" + (p.targetDuration.map { String(format: " of ≤ %g s", $0) } ?? ""))
            if p.initSection { head.append("fMP4 segments") }
            if p.byteRanges { head.append("byte ranges") }
        }
        if !r.encryption.isEmpty { head.append("encrypted: " + r.encryption.joined(separator: ", ")) }
        var lines = [r.input, "  " + head.joined(separator: " · ")]
        for (i, v) in r.variants.enumerated() {
            var parts = ["  variant \(i + 1)"]
            if let b = v.bandwidth { parts.append(kbps(Int64(b))) }
            if let w = v.width, let h = v.height { parts.append("\(w)x\(h)") }
            if let f = v.frameRate { parts.append(String(format: "%g fps", f)) }
            if let c = v.codecs { parts.append(c) }
            if let a = v.audioGroup { parts.append("audio \"\(a)\"") }
            if let s = v.subtitlesGroup { parts.append("subtitles \"\(s)\"") }
            if r.isMaster { parts.append("\(v.playlist.segments) segments, \(clock(v.playlist.duration))") }
            lines.append(parts.joined(separator: "  "))
            if let note = v.note { lines.append("    " + note) }
            for t in v.firstSegment?.tracks ?? [] { lines.append("    #\(t.index) " + trackLine(t)) }
        }
        for rendition in r.renditions {
            var parts = ["  \(rendition.type.lowercased()) \"\(rendition.groupID)\""]
            if let n = rendition.name { parts.append(n) }
            if let l = rendition.language { parts.append(l) }
            if let c = rendition.channels { parts.append("\(c) ch") }
            if rendition.isDefault { parts.append("default") }
            if rendition.uri == nil { parts.append("(in the variant's segments)") }
            lines.append(parts.joined(separator: "  "))
            for t in rendition.firstSegment?.tracks ?? [] { lines.append("    #\(t.index) " + trackLine(t)) }
        }
        lines += costLine(r.fetch, seconds: r.seconds, verbose: verbose)
        return lines.joined(separator: "\n")
    }

    /// What the probe cost: shown with -v, dimmed on a terminal, left out in a pipe.
    private static func costLine(_ fetch: SourceCounters, seconds: Double, verbose: Bool) -> [String] {
        let cost =
            "  fetched: \(fetch.requests) requests, \(Console.humanBytes(fetch.bytesFetched)), "
            + "\(Console.humanBytes(fetch.bytesFromCache)) from cache, \(String(format: "%.2f", seconds)) s"
        if verbose { return [cost] }
        return isatty(STDOUT_FILENO) != 0 ? ["\u{1B}[2m" + cost + "\u{1B}[0m"] : []
    }

    private static func trackLine(_ t: TrackInfo) -> String {
        var parts = [t.kind.rawValue.padding(toLength: 5, withPad: " ", startingAt: 0), t.codec]
        if let p = t.profile { parts[1] += " (\(p))" }
        if let w = t.width, let h = t.height { parts.append("\(w)x\(h)") }
        if let f = t.frameRate { parts.append(String(format: "%g fps", (f * 1000).rounded() / 1000)) }
        if let p = t.pixelFormat { parts.append(p) }
        if let r = t.rotation, r != 0 { parts.append("rotated \(Int(r))°") }
        if let s = t.sampleRate { parts.append("\(s) Hz") }
        if let l = t.channelLayout ?? t.channels.map({ "\($0) ch" }) { parts.append(l) }
        if let lang = t.language, lang != "und" { parts.append(lang) }
        if let b = t.bitRate { parts.append(kbps(b)) }
        if t.isDefault { parts.append("default") }
        return parts.joined(separator: "  ")
    }

    private static func kbps(_ bits: Int64) -> String {
        bits >= 10_000_000 ? String(format: "%.1f Mb/s", Double(bits) / 1e6) : "\(bits / 1000) kb/s"
    }

    private static func clock(_ seconds: Double) -> String {
        let total = Int(seconds)
        let h = total / 3600, m = total / 60 % 60
        let s = seconds - Double(h * 3600 + m * 60)
        return h > 0 ? String(format: "%d:%02d:%06.3f", h, m, s) : String(format: "%d:%06.3f", m, s)
    }
}
