import Foundation
import MediaKit

/// How a prefetch (and its plan) is shown to people (`PrefetchReport` is the object for programs).
enum PrefetchOutput {
    static func human(_ o: PrefetchResult, planOnly: Bool) -> String {
        let p = o.plan
        let sampleBytes = p.sampleRanges.reduce(Int64(0)) { $0 + Int64($1.count) }
        var lines = [p.input]
        lines.append(
            String(
                format: "  %@ %.3f s from %.3f s: %d sample ranges (%@), header %@; %d missing ranges, %@",
                planOnly ? "plan for" : "prefetched", p.seconds, p.start, p.sampleRanges.count,
                Console.humanBytes(sampleBytes), Console.humanBytes(p.headerRanges.reduce(0) { $0 + Int64($1.count) }),
                p.missing.count, Console.humanBytes(p.missingBytes)))
        for t in p.tracks {
            var line = "  #\(t.index) \(t.kind.rawValue.padding(toLength: 5, withPad: " ", startingAt: 0))"
            if p.estimated {
                line += "  (no index)"
            } else if let a = t.firstTime, t.samples == nil {
                // Whole stretches between index points (Cues, a table of contents): samples not counted.
                line += String(
                    format: "  between index points  %.3f–%@", a,
                    t.lastTime.map { String(format: "%.3f s", $0) } ?? "end")
            } else if let samples = t.samples, let bytes = t.bytes {
                line += String(format: "  %d samples  %@", samples, Console.humanBytes(bytes))
                if let a = t.firstTime, let b = t.lastTime { line += String(format: "  %.3f–%.3f s", a, b) }
            }
            if let buffer = o.buffered.first(where: { $0.index == t.index }) {
                let span = buffer.ranges.first(where: { $0.contains(p.start) || $0.lowerBound >= p.start })
                line +=
                    span.map { String(format: "  cached %.3f–%.3f s", $0.lowerBound, $0.upperBound) } ?? "  not cached"
            }
            lines.append(line)
        }
        for part in p.playerRanges {
            lines.append(
                "  for \(part.players.joined(separator: ", ")): \(part.range.lowerBound)-\(part.range.upperBound - 1)"
                    + "  (\(Console.humanBytes(Int64(part.range.count))), \(part.why))")
        }
        if planOnly {
            for r in p.missing {
                lines.append("  fetch \(r.lowerBound)-\(r.upperBound - 1)  (\(Console.humanBytes(Int64(r.count))))")
            }
        } else {
            lines.append(
                String(
                    format: "  fetched: %lld requests, %@ in %.2f s", o.fetched.requests,
                    Console.humanBytes(o.fetched.bytesFetched), o.seconds))
        }
        return lines.joined(separator: "\n")
    }

    /// An HLS prefetch: the variant, then per media playlist the segments planned and what is cached.
    static func human(_ r: StreamPrefetchResult) -> String {
        var variant = r.bandwidth.map { " of the \($0 / 1000) kb/s variant" } ?? ""
        if let w = r.width, let h = r.height { variant += " (\(w)x\(h))" }
        var lines = [
            r.input,
            String(
                format: "  %@ %.3f s from %.3f s%@", r.planOnly ? "plan for" : "prefetched", r.seconds, r.start, variant
            ),
        ]
        for w in r.windows {
            var line = String(
                format: "  %@  %d segments %.3f–%.3f s", w.role.padding(toLength: 5, withPad: " ", startingAt: 0),
                w.segments, w.first, w.end)
            let spans = w.buffered.map { String(format: "%.3f–%.3f s", $0.lowerBound, $0.upperBound) }
            line += spans.isEmpty ? "  nothing cached" : "  cached " + spans.joined(separator: ", ")
            lines.append(line)
            lines.append("    \(w.playlist)" + (w.bandwidth.map { " (\($0 / 1000) kb/s)" } ?? ""))
        }
        if r.planOnly {
            for part in r.windows.flatMap(\.parts) {
                lines.append(
                    "  fetch \(part.uri)" + (part.range.map { " \($0.lowerBound)-\($0.upperBound - 1)" } ?? "")
                        + "  \(part.why): " + part.players.joined(separator: ", "))
            }
        } else {
            lines.append(
                String(
                    format: "  fetched: %lld requests, %@ in %.2f s", r.fetched.requests,
                    Console.humanBytes(r.fetched.bytesFetched), r.elapsed))
        }
        return lines.joined(separator: "\n")
    }
}
