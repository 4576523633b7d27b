import ByteSources
import Foundation

/// Rewrites a DASH manifest so that every segment, initialization and single-file URL in it
/// points where `route` says (for `mprobe serve`, back at its own proxy). A manifest's URLs are
/// relative to a chain of `BaseURL`s, which a player would resolve against the proxy: each
/// Representation gets its own segment information instead, with absolute URLs resolved through
/// that chain (a template's `$Number$`, `$Time$`, ... kept for the player to fill in), and the
/// `BaseURL`s go (a single-file Representation keeps one: its file, routed). A `Location` (where a
/// live player fetches the manifest again) is routed too; a manifest with remote elements
/// (`xlink:href`) is refused.
public enum DASHRewriter {
    /// A `dynamic` MPD: live, its segments follow the clock.
    public static func isLive(_ text: String) -> Bool {
        (try? MarkupElement.parse(text))?["type"] == "dynamic"
    }

    public static func rewrite(_ text: String, base: String, route: @escaping (String) -> String) throws -> String {
        let root: MarkupElement
        do { root = try MarkupElement.parse(text) } catch let e as MarkupElement.Malformed {
            throw MediaError.malformedPlaylist(input: base, detail: "not well-formed XML: \(e.detail)")
        }
        guard root.name == "MPD" else {
            throw MediaError.malformedPlaylist(input: base, detail: "its root element is not <MPD>")
        }
        // A remote element (`xlink:href` on a Period, AdaptationSet, ...) is more manifest at a URL
        // of its own, which the player would fetch and resolve as it is: not routed, so refused.
        if let remote = root.first(where: { $0["href"] != nil }) {
            throw MediaError.malformedPlaylist(
                input: base,
                detail: "its <\(remote.name)> is a remote element (xlink:href), which mprobe does not route")
        }
        let rewriter = Rewriter(document: base, route: route)
        let manifestBase = try DASHManifest.resolve(root.child("BaseURL")?.text, against: base, url: base) ?? base
        var mpd = root.removing("BaseURL")
        mpd.children = try mpd.children.map { period in
            // Where a live player fetches the manifest again: through the proxy too.
            if period.name == "Location" || period.name == "PatchLocation" {
                var location = period
                location.text = try rewriter.routed(
                    period.text.trimmingCharacters(in: .whitespacesAndNewlines), base: base)
                return location
            }
            guard period.name == "Period" else { return period }
            let periodBase =
                try DASHManifest.resolve(period.child("BaseURL")?.text, against: manifestBase, url: base)
                ?? manifestBase
            var rewritten = period.removing("BaseURL")
            rewritten.children = try rewritten.children.map { set in
                guard set.name == "AdaptationSet" else { return set }
                return try rewriter.adaptationSet(set, base: periodBase)
            }
            return rewritten
        }
        return "<?xml version=\"1.0\" encoding=\"utf-8\"?>\n" + mpd.xml + "\n"
    }

    private struct Rewriter {
        let document: String
        let route: (String) -> String

        func adaptationSet(_ set: MarkupElement, base periodBase: String) throws -> MarkupElement {
            let base =
                try DASHManifest.resolve(set.child("BaseURL")?.text, against: periodBase, url: document) ?? periodBase
            var rewritten = set.removing("BaseURL", "SegmentTemplate", "SegmentList", "SegmentBase")
            rewritten.children = try rewritten.children.map { rep in
                guard rep.name == "Representation" else { return rep }
                return try representation(rep, in: set, base: base)
            }
            return rewritten
        }

        func representation(_ rep: MarkupElement, in set: MarkupElement, base setBase: String) throws -> MarkupElement {
            let base = try DASHManifest.resolve(rep.child("BaseURL")?.text, against: setBase, url: document) ?? setBase
            var out = rep.removing("BaseURL", "SegmentTemplate", "SegmentList", "SegmentBase")
            let information = DASHManifest.segmentInformation(of: rep, in: set)
            if let template = information, template.name == "SegmentTemplate" {
                // The Representation's own attributes over its AdaptationSet's; its timeline, else the set's.
                var merged = set.child("SegmentTemplate") ?? template
                for (name, value) in rep.child("SegmentTemplate")?.written ?? [] {
                    merged = merged.setting(name, to: value)
                }
                merged.children = [
                    (rep.child("SegmentTemplate")?.child("SegmentTimeline")
                        ?? set.child("SegmentTemplate")?.child("SegmentTimeline"))
                ]
                .compactMap { $0 }
                for name in ["media", "initialization", "index"] where merged[name] != nil {
                    merged = merged.setting(name, to: try routedTemplate(merged[name]!, base: base))
                }
                out.children.append(merged)
            } else if let list = information, list.name == "SegmentList" {
                var rewritten = list
                rewritten.children = try list.children.map { item in
                    switch item.name {
                    case "SegmentURL": return item.setting("media", to: try routed(item["media"], base: base))
                    case "Initialization", "RepresentationIndex":
                        return item.setting("sourceURL", to: try routed(item["sourceURL"], base: base))
                    default: return item
                    }
                }
                out.children.append(rewritten)
            } else {
                // One file: its BaseURL is the media, with its SegmentBase (if any) as it was.
                out.children.insert(MarkupElement(name: "BaseURL", attributes: [:], text: route(base)), at: 0)
                if let segmentBase = information { out.children.append(segmentBase) }
            }
            return out
        }

        /// `reference` (nil: the base itself) resolved and routed.
        func routed(_ reference: String?, base: String) throws -> String {
            route(try DASHManifest.resolve(reference, against: base, url: document) ?? base)
        }

        /// A template resolved and routed with its identifiers (`$Number%05d$`...) kept as they are,
        /// for the player to fill in: they stand as plain placeholders while the URL is made.
        func routedTemplate(_ template: String, base: String) throws -> String {
            var identifiers: [String] = []
            var plain = ""
            var rest = Substring(template)
            while let open = rest.firstIndex(of: "$") {
                plain += rest[..<open]
                guard let close = rest[rest.index(after: open)...].firstIndex(of: "$") else { break }
                plain += "MPROBEID\(identifiers.count)X"
                identifiers.append(String(rest[open...close]))
                rest = rest[rest.index(after: close)...]
            }
            plain += rest
            var routed = try self.routed(plain, base: base)
            for (i, identifier) in identifiers.enumerated() {
                routed = routed.replacingOccurrences(of: "MPROBEID\(i)X", with: identifier)
            }
            return routed
        }
    }
}

extension MarkupElement {
    /// This element or the first below it (depth first) that `matches`.
    func first(where matches: (MarkupElement) -> Bool) -> MarkupElement? {
        if matches(self) { return self }
        for child in children {
            if let found = child.first(where: matches) { return found }
        }
        return nil
    }

    /// A copy without the children named `names`.
    func removing(_ names: String...) -> MarkupElement {
        var copy = self
        copy.children = children.filter { !names.contains($0.name) }
        return copy
    }
}
