import Foundation
import MediaKit

/// How a prefetch (and its plan) is shown to people (`PrefetchReport` is the object for programs).
enum PrefetchOutput {
    static func human(_ o: PrefetchResult, planOnly: Bool) -> String {
        let p = o.plan
        let sampleBytes = p.sampleRanges.reduce(Int64(0)) { $0 + Int64($1.count) }
        var lines = [p.input]
        lines.append(String(format: "  %@ %.3f s from %.3f s: %d sample ranges (%@), header %@; %d missing ranges, %@",
                            planOnly ? "plan for" : "prefetched", p.seconds, p.start, p.sampleRanges.count,
                            Console.humanBytes(sampleBytes), Console.humanBytes(p.headerRanges.reduce(0) { $0 + Int64($1.count) }),
                            p.missing.count, Console.humanBytes(p.missingBytes)))
        for t in p.tracks {
            var line = "  #\(t.index) \(t.kind.rawValue.padding(toLength: 5, withPad: " ", startingAt: 0))"
            if p.estimated {
                line += "  (no index)"
            } else if let a = t.firstTime, t.samples == nil {
                // Whole stretches between index points (Cues, a table of contents): samples not counted.
                line += String(format: "  between index points  %.3f–%@", a, t.lastTime.map { String(format: "%.3f s", $0) } ?? "end")
            } else if let samples = t.samples, let bytes = t.bytes {
                line += String(format: "  %d samples  %@", samples, Console.humanBytes(bytes))
                if let a = t.firstTime, let b = t.lastTime { line += String(format: "  %.3f–%.3f s", a, b) }
            }
            if let buffer = o.buffered.first(where: { $0.index == t.index }) {
                let span = buffer.ranges.first(where: { $0.contains(p.start) || $0.lowerBound >= p.start })
                line += span.map { String(format: "  cached %.3f–%.3f s", $0.lowerBound, $0.upperBound) } ?? "  not cached"
            }
            lines.append(line)
        }
        if planOnly {
            for r in p.missing { lines.append("  fetch \(r.lowerBound)-\(r.upperBound - 1)  (\(Console.humanBytes(Int64(r.count))))") }
        } else {
            lines.append(String(format: "  fetched: %lld requests, %@ in %.2f s", o.fetched.requests,
                                Console.humanBytes(o.fetched.bytesFetched), o.seconds))
        }
        return lines.joined(separator: "\n")
    }
}
