import Foundation

/// Runs one job per input on up to `jobs` threads and hands results to `emit` in input order,
/// each as soon as it and all before it are done, so output streams but stays ordered.
enum Batch {
    static func run<R>(_ inputs: [String], jobs: Int, work: @escaping @Sendable (Int, String) -> R,
                       emit: (Int, String, R) -> Void) {
        let results = OrderedResults<R>(count: inputs.count)
        let queue = DispatchQueue(label: "mprobe.batch", attributes: .concurrent)
        let slots = DispatchSemaphore(value: max(1, jobs))
        DispatchQueue.global().async {
            for (i, input) in inputs.enumerated() {
                slots.wait()
                queue.async {
                    results.set(i, work(i, input))
                    slots.signal()
                }
            }
        }
        for i in inputs.indices { emit(i, inputs[i], results.wait(i)) }
    }

    /// Inputs from operands, `-i FILE` (one per line, `#` comments) or `-i -` for stdin.
    static func inputs(operands: [String], listFile: String?) throws -> [String] {
        var inputs = operands
        if let listFile {
            let text: String
            if listFile == "-" {
                text = String(decoding: FileHandle.standardInput.readDataToEndOfFile(), as: UTF8.self)
            } else {
                guard let data = FileManager.default.contents(atPath: listFile) else {
                    throw UsageError("-i \(listFile): cannot read the input list")
                }
                text = String(decoding: data, as: UTF8.self)
            }
            inputs += text.split(whereSeparator: \.isNewline).map { $0.trimmingCharacters(in: .whitespaces) }
                .filter { !$0.isEmpty && !$0.hasPrefix("#") }
        }
        return inputs
    }
}

/// Results slots filled by worker threads and waited on in order by the printing thread.
private final class OrderedResults<R>: @unchecked Sendable {
    private var slots: [R?]
    private let condition = NSCondition()

    init(count: Int) { slots = Array(repeating: nil, count: count) }

    func set(_ i: Int, _ value: R) {
        condition.lock()
        slots[i] = value
        condition.broadcast()
        condition.unlock()
    }

    func wait(_ i: Int) -> R {
        condition.lock()
        defer { condition.unlock() }
        while slots[i] == nil { condition.wait() }
        return slots[i]!
    }
}
