#if canImport(Glibc)
import Glibc
#endif

/// A folder output files are written into (thumbnails, sprites, manifests). Every failure is an
/// `OutputError` whose sentence names the folder or file and says what is wrong, so a full disk or
/// a typo in `--out` reads as such rather than as a Foundation error dump.
public struct OutputFolder: Sendable {
    public let path: String

    public init(_ path: String) { self.path = path }

    /// Throws unless `path` is a folder this process can write into, or one it can create (its
    /// nearest existing ancestor is a writable folder). Creates nothing: callers check before
    /// they fetch anything, and create only when there is something to write.
    public func checkWritable() throws {
        if let isFolder = OutputFolder.isFolder(path) {
            guard isFolder else {
                throw OutputError("cannot create the output folder \(path): it \(OutputFolder.notFolder(path))")
            }
            if access(path, W_OK | X_OK) != 0 {
                throw OutputError("cannot write to the output folder \(path): \(OutputError.reason(errno))")
            }
            return
        }
        var ancestor = OutputFolder.parent(of: path)
        while OutputFolder.isFolder(ancestor) == nil, ancestor != OutputFolder.parent(of: ancestor) {
            ancestor = OutputFolder.parent(of: ancestor)
        }
        guard OutputFolder.isFolder(ancestor) == true else {
            throw OutputError(
                "cannot create the output folder \(path): \(ancestor) \(OutputFolder.notFolder(ancestor))")
        }
        if access(ancestor, W_OK | X_OK) != 0 {
            throw OutputError("cannot create the output folder \(path): \(OutputError.reason(errno))")
        }
    }

    /// Creates the folder and any missing parents.
    public func create() throws {
        var missing: [String] = []
        var folder = path
        while OutputFolder.isFolder(folder) == nil, folder != OutputFolder.parent(of: folder) {
            missing.append(folder)
            folder = OutputFolder.parent(of: folder)
        }
        if OutputFolder.isFolder(folder) == false {
            throw OutputError(
                folder == path
                    ? "cannot create the output folder \(path): it \(OutputFolder.notFolder(path))"
                    : "cannot create the output folder \(path): \(folder) \(OutputFolder.notFolder(folder))")
        }
        for folder in missing.reversed() where mkdir(folder, 0o755) != 0 && errno != EEXIST {
            throw OutputError("cannot create the output folder \(path): \(OutputError.reason(errno))")
        }
    }

    /// Writes `bytes` as the file `name` in this folder, replacing what was there. The bytes go to
    /// a new file (`O_EXCL`, never through a link) that is then renamed over `name`: a symbolic
    /// link planted at a predictable name is replaced, never written through, and no reader ever
    /// sees half a file.
    public func write(_ bytes: [UInt8], to name: String) throws {
        let file = path + "/" + name
        var temporary = ""
        var fd: Int32 = -1
        for attempt in 0..<100 where fd < 0 {
            temporary = path + "/." + name + ".\(getpid()).\(attempt).tmp"
            fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o644)
            if fd < 0 && errno != EEXIST { break }
        }
        guard fd >= 0 else { throw OutputError("cannot write \(file): \(OutputError.reason(errno))") }
        do {
            try OutputFolder.writeAll(bytes, to: fd, file: file)
            // Some file systems (NFS, quotas) report a full disk only when the file is closed.
            let closed = close(fd)
            fd = -1
            if closed != 0 && errno != EINTR { throw OutputError("cannot write \(file): \(OutputError.reason(errno))") }
            guard rename(temporary, file) == 0 else {
                throw OutputError("cannot write \(file): \(OutputError.reason(errno))")
            }
        } catch {
            if fd >= 0 { close(fd) }
            unlink(temporary)
            throw error
        }
    }

    private static func writeAll(_ bytes: [UInt8], to fd: Int32, file: String) throws {
        var done = 0
        while done < bytes.count {
            let n = bytes.withUnsafeBytes { all in
                all.baseAddress.map { Glibc.write(fd, $0 + done, all.count - done) } ?? 0
            }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else {
                let error = n < 0 ? errno : ENOSPC  // a zero-byte write makes no progress: the device is full
                throw OutputError("cannot write \(file): \(OutputError.reason(error))")
            }
            done += n
        }
    }

    /// True for a folder, false for anything else that exists, nil when nothing is there.
    private static func isFolder(_ path: String) -> Bool? {
        var st = stat()
        guard stat(path, &st) == 0 else { return nil }
        return st.st_mode & S_IFMT == S_IFDIR
    }

    /// "is a file", or "is not a folder" for devices, sockets and the like.
    private static func notFolder(_ path: String) -> String {
        var st = stat()
        return stat(path, &st) == 0 && st.st_mode & S_IFMT == S_IFREG ? "is a file" : "is not a folder"
    }

    /// The folder holding `path`: `.` for a bare name, `/` at the top. (Written out because
    /// `NSString.deletingLastPathComponent` traps on a bare name in this Foundation.)
    static func parent(of path: String) -> String {
        var trimmed = Substring(path)
        while trimmed.count > 1, trimmed.hasSuffix("/") { trimmed = trimmed.dropLast() }
        guard let slash = trimmed.lastIndex(of: "/") else { return "." }
        var parent = trimmed[..<slash]
        while parent.hasSuffix("/") { parent = parent.dropLast() }
        return parent.isEmpty ? "/" : String(parent)
    }
}

/// A local output file or folder could not be made or written: the sentence names it.
public struct OutputError: Error, CustomStringConvertible, Equatable {
    public let description: String

    init(_ description: String) { self.description = description }

    /// `strerror`'s text, in lower case to sit inside a sentence ("no space left on device").
    static func reason(_ code: Int32) -> String {
        let text = String(cString: strerror(code))
        return text.prefix(1).lowercased() + text.dropFirst()
    }
}
