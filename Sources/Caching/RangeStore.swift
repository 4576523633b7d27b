/// Where the read path keeps the bytes of one resource: the on-disk `CacheEntry`, or a
/// bounded `MemoryRangeStore` when caching is off or the resource is too big to store.
///
/// Implementations are thread-safe: a demux thread may read while a fetch thread writes.
public protocol RangeStore: AnyObject, Sendable {
    /// The validators recorded for the stored bytes.
    var validators: ResourceValidators { get }
    /// Bytes that can be read now.
    var available: ByteRangeSet { get }
    /// Picks up ranges that other writers (threads or processes) have added since.
    func refresh() throws
    /// Records what the origin reported. Returns true when it conflicts with what was stored,
    /// in which case all stored bytes have been dropped. `replacing`: `incoming` is a whole
    /// answer's validators, of another version than the stored ones even where no field differs
    /// (one has an ETag or Last-Modified the other has not): the stored bytes go, and `incoming`
    /// replaces what was recorded instead of adding to it.
    @discardableResult
    func applyValidators(_ incoming: ResourceValidators, contentType: String?, replacing: Bool) throws -> Bool
    /// Drops every stored byte of `generation` and starts the next one: the content was found to
    /// be of two versions although the validators agree (an origin without ETag or Last-Modified
    /// changed under the same size). Nothing happens when the store has moved on already.
    func dropVersion(_ generation: StoreGeneration) throws
    /// Changes whenever the stored content is replaced (new validators, a new data file): a
    /// transfer remembers it when its response arrives and writes with it.
    var generation: StoreGeneration { get }
    /// Stores bytes at their true offset if the store is still at `generation`; returns false (and
    /// stores nothing) when the content was replaced meanwhile, so old and new never mix.
    /// Stored bytes are readable at once and durable after `commit()`.
    func write(_ bytes: UnsafeRawBufferPointer, at offset: Int64, generation: StoreGeneration) throws -> Bool
    /// Makes written bytes durable and records their ranges. Written bytes are also committed
    /// without asking, within about a second.
    func commit() throws
    /// Releases `claim` once the bytes written so far are committed, which happens soon after the
    /// last claim handed over (within a second at most): for a fetch that ended and whose readers
    /// need not wait for the commit.
    func releaseAfterCommit(_ claim: FetchClaim)
    /// Copies available bytes starting at `offset`: how many (0 if `offset` is not available),
    /// and the generation and validators they belong to, taken together with the bytes.
    func read(into buffer: UnsafeMutableRawBufferPointer, at offset: Int64) throws -> StoredRead
    /// What `read` at `offset` would find, copying nothing: how many bytes are there from it (0 if
    /// none), and the generation and validators they belong to.
    func peek(at offset: Int64) -> StoredRead
    /// Counts one read for the hit/miss statistics: `fromCache` of its bytes were there before
    /// the reader asked; a miss when the rest were fetched for it.
    func recordRead(fromCache: Int64, miss: Bool)
    /// Counts bytes that came from the origin and were stored, once each.
    func recordFetched(_ bytes: Int64)
    /// The file that holds all of `range` (at the same offsets), for the kernel to send from; nil
    /// unless the store keeps files and all of `range` is there.
    func openStored(_ range: Range<Int64>) throws -> StoredFile?
    /// Claims `range` for fetching, so that other processes sharing the store do not fetch the
    /// same bytes at the same time. Returns either
    /// - a claim on a prefix of `range` (all of it, or up to where another holder's claim
    ///   begins): fetch `claim.range`, write and `commit()` it, then `release()` the claim (or
    ///   hand it to `releaseAfterCommit`); or
    /// - nil after having waited for another holder whose claim covered `range.lowerBound` to
    ///   release it: call `refresh()` and look at `available` again (the bytes are usually there
    ///   now; if the other fetch failed, claim again).
    ///
    /// Waiting polls, so it never blocks uninterruptibly: when `isCancelled` returns true it throws
    /// `CancellationError`. Claims are advisory and cross-process only; threads of one process
    /// still coordinate among themselves (they would wait for each other here as well).
    func claimFetch(_ range: Range<Int64>, isCancelled: () -> Bool) throws -> FetchClaim?
}

/// One version of a store's content. A new generation starts whenever the content is replaced
/// (the origin's validators changed, or the entry moved to a new data file after eviction): bytes
/// of a transfer that began in another generation are refused. For the disk cache it is the index
/// row and its `generation` column; for memory stores a counter.
public struct StoreGeneration: Sendable, Equatable {
    public let row: Int64
    public let number: Int64

    public init(row: Int64, number: Int64) {
        self.row = row
        self.number = number
    }
}

/// What one `RangeStore.read` copied, and the version of the content it came from.
public struct StoredRead: Sendable {
    public let count: Int
    public let generation: StoreGeneration
    public let validators: ResourceValidators
}

/// All of a range in a store's file: the file, held open for as long as this value is kept, and
/// the version of the content it holds. The range's bytes in that file never change: a new
/// version is a new file, and eviction passes over a file that is open (its shared lock).
public struct StoredFile: Sendable {
    /// What keeps the file open: nothing else closes it (no descriptor copied per response).
    let file: DataFile
    public let generation: StoreGeneration
    public let validators: ResourceValidators

    /// The file's descriptor, to send from: open while this value (or a copy) is kept.
    public var fd: Int32 { file.descriptor }
}

extension RangeStore {
    /// Records what the origin reported, adding it to what is known (`applyValidators(_:contentType:replacing:)`).
    @discardableResult
    public func applyValidators(_ incoming: ResourceValidators, contentType: String?) throws -> Bool {
        try applyValidators(incoming, contentType: contentType, replacing: false)
    }
}
