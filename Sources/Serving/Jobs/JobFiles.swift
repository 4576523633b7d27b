import Foundation

/// Reading a job's files (`<root>/<job id>/<n>/<name>`) for `/v1/jobs/{id}/files/...` without
/// following a symbolic link anywhere on the way: a link planted in the folder (to `/etc/passwd`,
/// or a linked folder) is refused as if the file did not exist, never served. Each component is
/// opened relative to the one before with `O_NOFOLLOW`, and the file must be a regular file with
/// one name (no hard link), as the cache's data files are.
enum JobFiles {
    /// The largest file served (sprite sheets are a few MB).
    static let maxBytes = 64 << 20

    /// The bytes of `components` below `root`, or nil when any of them is missing, a link, or
    /// not what it should be (a folder, then a regular file).
    static func read(root: String, _ components: [String]) -> [UInt8]? {
        guard let file = components.last else { return nil }
        var fd = open(root, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        for folder in components.dropLast() {
            let next = openat(fd, folder, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
            close(fd)
            guard next >= 0 else { return nil }
            fd = next
        }
        let opened = openat(fd, file, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK)
        close(fd)
        guard opened >= 0 else { return nil }
        defer { close(opened) }
        var info = stat()
        // One name only: a hard link made in the folder to a file elsewhere is not served either.
        guard fstat(opened, &info) == 0, info.st_mode & S_IFMT == S_IFREG, info.st_nlink == 1, info.st_size <= maxBytes
        else { return nil }
        var bytes = [UInt8](repeating: 0, count: Int(info.st_size))
        var done = 0
        while done < bytes.count {
            let n = bytes.withUnsafeMutableBytes { pread(opened, $0.baseAddress! + done, $0.count - done, off_t(done)) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { return nil }
            done += n
        }
        return bytes
    }

    /// Removes what a writer killed mid-file left in the job folders under `root`: hidden
    /// temporary files (`.NAME.PID.N.tmp`, which `OutputFolder.write` renames into place when it
    /// finishes). Run at start, before any job writes; links are removed, never followed.
    static func removeTemporaries(root: String) {
        for job in entries(of: root) where job.isFolder {
            for item in entries(of: root + "/" + job.name) {
                if item.isFolder {
                    for file in entries(of: root + "/" + job.name + "/" + item.name) where isTemporary(file.name) {
                        unlink(root + "/" + job.name + "/" + item.name + "/" + file.name)
                    }
                } else if isTemporary(item.name) {
                    unlink(root + "/" + job.name + "/" + item.name)
                }
            }
        }
    }

    private static func isTemporary(_ name: String) -> Bool { name.hasPrefix(".") && name.hasSuffix(".tmp") }

    /// Bytes of the regular files of one item (`<root>/<job id>/<item>/`), without reading them.
    static func itemBytes(root: String, job: String, item: String) -> Int {
        let folder = root + "/" + job + "/" + item
        return entries(of: folder).filter { !$0.isFolder }.reduce(0) { total, entry in
            var info = stat()
            guard lstat(folder + "/" + entry.name, &info) == 0, info.st_mode & S_IFMT == S_IFREG else { return total }
            return total + Int(info.st_size)
        }
    }

    /// The files of one item (`<root>/<job id>/<item>/`), read as `read` reads them, by name.
    static func item(root: String, job: String, item: String) -> [(name: String, bytes: [UInt8])] {
        entries(of: root + "/" + job + "/" + item).filter { !$0.isFolder && !isTemporary($0.name) }.sorted {
            $0.name < $1.name
        }.compactMap { entry in read(root: root, [job, item, entry.name]).map { (entry.name, $0) } }
    }

    /// The names in `folder` and whether each is a real folder (not a link to one).
    private static func entries(of folder: String) -> [(name: String, isFolder: Bool)] {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: folder) else { return [] }
        return names.map { name in
            var info = stat()
            let isFolder = lstat(folder + "/" + name, &info) == 0 && info.st_mode & S_IFMT == S_IFDIR
            return (name, isFolder)
        }
    }
}
