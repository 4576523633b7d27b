#if canImport(Glibc)
import Glibc
#endif

/// The files of one cache directory and the rules that keep it private: the directory and
/// `data/` are 0700, every file 0600, whatever the umask; nothing in it is reached through a
/// symbolic link, and nothing belonging to another user is used.
///
/// The cache directory itself may be a symbolic link (`~/.cache` often is); `data/` and the
/// index files may not, because no writer of ours makes them so.
///
/// A directory is used only if it is new, empty, or already a cache (it has an index or our
/// `CACHEDIR.TAG`): a mistyped `--cache-dir` naming a home or project directory must never have
/// its mode changed or its `data/` emptied. Only files named as data files are ever removed.
struct CacheDirectory: Sendable {
    let path: String

    var indexPath: String { path + "/index.sqlite" }
    var dataPath: String { path + "/data" }
    /// Marks the directory as a cache, to mprobe and (by the Cache Directory Tagging convention,
    /// whose first line this is) to backup tools, which then skip it.
    var tagPath: String { path + "/CACHEDIR.TAG" }
    static let tagText =
        "Signature: 8a477f597d28d172789f06886806bc55\n"
        + "# This directory is mprobe's cache of media bytes; `mprobe cache clear` empties it.\n"
    /// The index and the files SQLite keeps next to it.
    var indexFiles: [String] { ["", "-wal", "-shm", "-journal"].map { indexPath + $0 } }
    static let asideMarker = ".corrupt-"

    func dataFile(_ generation: StoreGeneration) -> String {
        "\(dataPath)/\(generation.row)-\(generation.number).bin"
    }

    /// Whether `name` in `data/` is one of ours (`<row>-<number>.bin`).
    static func isDataFileName(_ name: String) -> Bool {
        guard name.hasSuffix(".bin") else { return false }
        let parts = name.dropLast(4).split(separator: "-", omittingEmptySubsequences: false)
        return parts.count == 2 && parts.allSatisfy { !$0.isEmpty && $0.allSatisfy { $0.isASCII && $0.isNumber } }
    }

    /// Throws unless the directory is empty or a cache (an index, or our tag, in it).
    func requireCache() throws {
        let names = try CacheDirectory.names(in: path)
        guard !names.isEmpty, !names.contains("index.sqlite") else { return }
        switch names.contains("CACHEDIR.TAG") ? tag : .foreign {
        case .ours: return
        // Another opener of this new directory has created the tag and not yet written it (a
        // third may have made an empty `data/` meanwhile). Another tool's tag may be a start of
        // ours too (its first line is the convention's): then anything more is not ours.
        case .beingWritten where names == ["CACHEDIR.TAG"]: return
        case .beingWritten
        where Set(names) == ["CACHEDIR.TAG", "data"] && (try? CacheDirectory.names(in: dataPath))?.isEmpty == true:
            return
        case .beingWritten, .foreign: throw CacheError.notACache(path: path, holds: names.sorted())
        }
    }

    private enum Tag { case ours, beingWritten, foreign }

    /// Whether `CACHEDIR.TAG` is the one we write (other tools tag their caches too), or the
    /// start of it.
    private var tag: Tag {
        let fd = open(tagPath, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
        guard fd >= 0 else { return .foreign }
        defer { close(fd) }
        var bytes = [UInt8](repeating: 0, count: 512)
        let n = read(fd, &bytes, bytes.count)
        let ours = Array(CacheDirectory.tagText.utf8)
        guard n >= 0, n <= ours.count, bytes.prefix(n).elementsEqual(ours.prefix(n)) else { return .foreign }
        return n == ours.count ? .ours : .beingWritten
    }

    /// Writes the tag unless it is there; a full disk only delays it (the index marks the cache too).
    private func writeTag() throws {
        let fd = open(tagPath, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        if fd < 0 {
            if [EEXIST, ENOSPC, EDQUOT, EROFS].contains(errno) { return }
            throw CacheError.io(function: "open", path: tagPath, errno: errno)
        }
        defer { close(fd) }
        let text = Array(CacheDirectory.tagText.utf8)
        if write(fd, text, text.count) != text.count { unlink(tagPath) }  // a partial tag is no tag
    }

    /// Makes the directory and `data/` (0700) if missing, tightens loose modes of what is there,
    /// and refuses what is not ours. Returns whether this process may write in it; a read-only
    /// directory or file system is served read-only.
    func prepare() throws -> Bool {
        try makeIfMissing()
        guard let top = try FileStatus(path, followingLinks: true) else {
            throw CacheError.io(function: "stat", path: path, errno: ENOENT)
        }
        try top.requireOwnDirectory(path)
        try requireCache()
        let writable = faccessat(AT_FDCWD, path, W_OK, AT_EACCESS) == 0
        try top.tighten(path, to: 0o700)
        if writable { try writeTag() }

        var data = try FileStatus(dataPath, followingLinks: false)
        if data == nil && writable {
            try makeDirectory(dataPath)
            data = try FileStatus(dataPath, followingLinks: false)
        }
        if let data {
            try data.requireOwnDirectory(dataPath)
            try data.tighten(dataPath, to: 0o700)
        }
        for file in indexFiles {
            guard let status = try FileStatus(file, followingLinks: false) else { continue }
            try status.requireOwnRegularFile(file)
            try status.tighten(file, to: 0o600)
        }
        return writable && faccessat(AT_FDCWD, dataPath, W_OK, AT_EACCESS) == 0
    }

    func makeIfMissing() throws {
        if try FileStatus(path, followingLinks: true) == nil { try makeDirectory(path) }
    }

    /// The same directory named without symbolic links (`~/.cache` is often one): SQLite refuses
    /// to open a database whose path goes through a link, and the files below are opened by name.
    func resolved() throws -> CacheDirectory {
        guard let real = realpath(path, nil) else {
            throw CacheError.io(function: "realpath", path: path, errno: errno)
        }
        defer { free(real) }
        return CacheDirectory(path: String(cString: real))
    }

    /// Creates the index file 0600 if it is missing, so that SQLite, which gives its WAL and
    /// shared-memory files the database file's mode, makes them 0600 too.
    func createIndexFileIfMissing() throws {
        try CacheDirectory.createPrivateFileIfMissing(indexPath)
    }

    /// Creates `file` empty and 0600 (whatever the umask) unless it exists; never through a link.
    static func createPrivateFileIfMissing(_ file: String) throws {
        let fd = open(file, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        if fd < 0 {
            if errno == EEXIST { return }
            throw CacheError.io(function: "open", path: file, errno: errno)
        }
        defer { close(fd) }
        guard fchmod(fd, 0o600) == 0 else { throw CacheError.io(function: "fchmod", path: file, errno: errno) }
    }

    /// `mkdir -p`: parents with the usual 0755 (less the umask), the last one 0700 exactly.
    private func makeDirectory(_ target: String) throws {
        var prefix = target.hasPrefix("/") ? "/" : ""
        let parts = target.split(separator: "/").map(String.init)
        for (i, part) in parts.enumerated() {
            prefix += (prefix.isEmpty || prefix.hasSuffix("/") ? "" : "/") + part
            let last = i == parts.count - 1
            if mkdir(prefix, last ? 0o700 : 0o755) != 0 {
                guard errno == EEXIST else { throw CacheError.io(function: "mkdir", path: prefix, errno: errno) }
                continue
            }
            if last, chmod(prefix, 0o700) != 0 { throw CacheError.io(function: "chmod", path: prefix, errno: errno) }
        }
    }

    /// The names in `directory`, without `.` and `..`.
    static func names(in directory: String) throws -> [String] {
        guard let dir = opendir(directory) else {
            throw CacheError.io(function: "opendir", path: directory, errno: errno)
        }
        defer { closedir(dir) }
        var names: [String] = []
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) {
                String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self)
            }
            if name != "." && name != ".." { names.append(name) }
        }
        return names
    }

    /// Removes the data files in `data/` (of an index that is gone), those `matches` chooses;
    /// anything else there is left alone.
    func removeDataFiles(where matches: (String) -> Bool = { _ in true }) throws {
        guard try FileStatus(dataPath, followingLinks: false) != nil else { return }
        for name in try CacheDirectory.names(in: dataPath) where CacheDirectory.isDataFileName(name) && matches(name) {
            try CacheDirectory.remove(dataPath + "/" + name)
        }
    }

    /// `unlink`, which never follows a symbolic link; a missing file is fine. A directory where a
    /// file belongs (never made by us) is removed with everything in it, links not followed.
    static func remove(_ file: String) throws {
        if unlink(file) == 0 || errno == ENOENT { return }
        guard errno == EISDIR else { throw CacheError.io(function: "unlink", path: file, errno: errno) }
        for name in try names(in: file) { try remove(file + "/" + name) }
        guard rmdir(file) == 0 else { throw CacheError.io(function: "rmdir", path: file, errno: errno) }
    }
}

/// `stat`/`lstat` of one path, and the checks the cache makes on it.
struct FileStatus {
    let info: stat

    /// nil when nothing is at `path`.
    init?(_ path: String, followingLinks: Bool) throws {
        var st = stat()
        guard (followingLinks ? stat(path, &st) : lstat(path, &st)) == 0 else {
            if errno == ENOENT { return nil }
            throw CacheError.io(function: followingLinks ? "stat" : "lstat", path: path, errno: errno)
        }
        info = st
    }

    var type: mode_t { info.st_mode & S_IFMT }

    func requireOwnDirectory(_ path: String) throws {
        if type == S_IFLNK { throw CacheError.unsafe(path: path, reason: "it is a symbolic link") }
        guard type == S_IFDIR else { throw CacheError.unsafe(path: path, reason: "it is not a directory") }
        try requireOwner(path)
    }

    /// A regular file of this user with no second name (a hard link would let a write land in a
    /// file outside the cache).
    func requireOwnRegularFile(_ path: String) throws {
        if type == S_IFLNK { throw CacheError.unsafe(path: path, reason: "it is a symbolic link") }
        guard type == S_IFREG else { throw CacheError.unsafe(path: path, reason: "it is not a regular file") }
        try requireOwner(path)
        guard info.st_nlink <= 1 else {
            throw CacheError.unsafe(path: path, reason: "it has \(info.st_nlink) hard links")
        }
    }

    private func requireOwner(_ path: String) throws {
        guard info.st_uid == geteuid() else {
            throw CacheError.unsafe(path: path, reason: "it belongs to user \(info.st_uid), not to user \(geteuid())")
        }
    }

    /// Clears permission bits beyond `mode` (a 0500 directory stays 0500). A read-only file
    /// system cannot be changed and needs no protection from this process.
    func tighten(_ path: String, to mode: mode_t) throws {
        let current = info.st_mode & 0o7777
        guard current & ~mode != 0 else { return }
        guard chmod(path, current & mode) == 0 || errno == EROFS else {
            throw CacheError.io(function: "chmod", path: path, errno: errno)
        }
    }
}
