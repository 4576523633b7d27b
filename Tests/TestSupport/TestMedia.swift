import Foundation

/// The media the repository ships for tests: the real-world corpus (`Tests/Corpus/files`) and the
/// synthetic samples (`Samples/`), as paths relative to the repository root, so a test can read
/// them locally (`path`) or have nginx serve the root and fetch them (`NginxServer.url`).
public enum TestMedia {
    public static let repoRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().path

    /// Every corpus file and every sample (not the scripts that make them, nor the benchmarks'
    /// folder), corpus first, sorted.
    /// A missing corpus or samples folder throws: the checkout is broken, never a reason to skip.
    public static func allInputs() throws -> [String] {
        let fm = FileManager.default
        let corpus = try fm.contentsOfDirectory(atPath: path("Tests/Corpus/files")).sorted().map {
            "Tests/Corpus/files/" + $0
        }
        // Files only: the benchmarks make their 10-minute samples in `Samples/large/`.
        let samples = try fm.contentsOfDirectory(atPath: path("Samples")).filter { name in
            var isFolder: ObjCBool = false
            return !name.hasSuffix(".sh") && fm.fileExists(atPath: path("Samples/" + name), isDirectory: &isFolder)
                && !isFolder.boolValue
        }.sorted().map { "Samples/" + $0 }
        return corpus + samples
    }

    /// The absolute path of `relative` (to the repository root).
    public static func path(_ relative: String) -> String { repoRoot + "/" + relative }
}
