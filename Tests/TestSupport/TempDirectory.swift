import Foundation

/// A fresh directory under the system temp dir, removed with everything in it when the
/// object goes away, so each test gets an isolated place for cache files and media.
public final class TempDirectory: Sendable {
    public let path: String

    public init(prefix: String = "mprobe-test") throws {
        // mkdtemp gives a unique, 0700 directory atomically; no racing with parallel tests.
        var base = NSTemporaryDirectory()
        while base.count > 1 && base.hasSuffix("/") { base.removeLast() }
        var template = Array((base + "/" + prefix + ".XXXXXX").utf8CString)
        let made = template.withUnsafeMutableBufferPointer { buf -> Bool in
            guard let base = buf.baseAddress else { return false }
            return mkdtemp(base) != nil
        }
        guard made else { throw TestSupportError.system(call: "mkdtemp", errno: errno) }
        path = template.withUnsafeBufferPointer { buf in
            String(cString: buf.baseAddress!)  // non-empty array, base address always exists
        }
    }

    /// The path of `name` inside this directory (the file is not created).
    public func file(_ name: String) -> String {
        path + "/" + name
    }

    deinit {
        try? FileManager.default.removeItem(atPath: path)
    }
}

/// A seeded random number generator (splitmix64), so that a test's random choices are the same on
/// every run.
public struct SeededGenerator: RandomNumberGenerator {
    private var state: UInt64
    public init(seed: UInt64) { state = seed }
    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// Deterministic pseudo-random bytes (splitmix64). Tests use it to build bodies whose every
/// offset is distinguishable, so a byte served from the wrong offset shows up as a mismatch.
/// Fills eight bytes per step so 100 MB stays cheap even in debug builds.
public func randomBytes(_ count: Int, seed: UInt64) -> [UInt8] {
    guard count > 0 else { return [] }
    var generator = SeededGenerator(seed: seed)
    @inline(__always) func next() -> UInt64 { generator.next() }
    return [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
        guard let base = buffer.baseAddress else { initialized = 0; return }
        let raw = UnsafeMutableRawPointer(base)
        let words = count / 8
        var offset = 0
        for _ in 0..<words {
            raw.storeBytes(of: next().littleEndian, toByteOffset: offset, as: UInt64.self)
            offset &+= 8
        }
        if offset < count {
            var last = next()
            while offset < count {
                base[offset] = UInt8(truncatingIfNeeded: last)
                last >>= 8
                offset += 1
            }
        }
        initialized = count
    }
}
