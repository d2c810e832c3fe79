import Logging
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The gateway's log handler: one line per event, in `StreamLogHandler`'s format (`<time> <level>
/// <label>: <key=value, sorted> [<source>] <message>`), so that what reads the log reads it as before,
/// at a fraction of the cost. `StreamLogHandler` calls `localtime` for every line (which asks the
/// kernel whether `/etc/localtime` changed) and writes each line with its own locked, flushed
/// `write`: about a sixth of an everyday send's CPU. Here the time text is made once a second, and
/// lines logged while another is being written go out together in the next `write` (``LogOutput``).
public struct LineLogHandler: LogHandler {
    public var logLevel: Logger.Level
    public var metadataProvider: Logger.MetadataProvider?
    public var metadata: Logger.Metadata = [:] {
        didSet { prettyMetadata = Self.prettify(metadata) }
    }
    private var prettyMetadata: String?
    private let label: String
    private let output: LogOutput

    public init(label: String, level: Logger.Level, output: LogOutput, metadataProvider: Logger.MetadataProvider? = nil) {
        self.label = label
        self.logLevel = level
        self.output = output
        self.metadataProvider = metadataProvider
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        var pretty = prettyMetadata
        let provided = metadataProvider?.get() ?? [:]
        if !provided.isEmpty || event.metadata?.isEmpty == false || event.error != nil {
            var merged = metadata
            merged.merge(provided) { _, provided in provided }
            if let explicit = event.metadata { merged.merge(explicit) { _, explicit in explicit } }
            if let error = event.error {
                merged["error.message"] = "\(error)"
                merged["error.type"] = "\(String(reflecting: type(of: error)))"
            }
            pretty = Self.prettify(merged)
        }
        var line = output.timestamp()
        line.reserveCapacity(line.utf8.count + label.utf8.count + (pretty?.utf8.count ?? 0) + event.source.utf8.count + 64)
        line += " "
        line += event.level.rawValue
        if !label.isEmpty {
            line += " "
            line += label
        }
        line += ":"
        if let pretty {
            line += " "
            line += pretty
        }
        line += " ["
        line += event.source
        line += "] "
        line += event.message.description
        line += "\n"
        output.write(line)
    }

    private static func prettify(_ metadata: Logger.Metadata) -> String? {
        guard !metadata.isEmpty else { return nil }
        var text = ""
        for (key, value) in metadata.sorted(by: { $0.key < $1.key }) {
            if !text.isEmpty { text += " " }
            text += key
            text += "="
            text += value.description
        }
        return text
    }
}

/// Where ``LineLogHandler``s write: a file descriptor (standard error), shared by every logger.
/// A line is handed to `write` by the thread that logs it, unless another thread is writing: then
/// it waits in a buffer, and that thread writes it with the others in its next `write` (as concurrent
/// commits share one). Each `write` holds whole lines. Memory stays bounded: while the output does
/// not keep up (a full pipe nobody reads), lines past ``capacity`` bytes are dropped and counted, and
/// the next write says how many.
public final class LogOutput: Sendable {
    /// The bytes to write, all at once, returning when they are written (or cannot be).
    public typealias Sink = @Sendable (UnsafeRawBufferPointer) -> Void

    private struct State {
        var pending: [UInt8] = []
        var writing = false
        var dropped = 0
    }

    public let capacity: Int
    private let sink: Sink
    private let state = Mutex(State())
    private let clock = Mutex<(second: Int, text: String)>((-1, ""))

    public init(capacity: Int = 4 << 20, sink: @escaping Sink) {
        self.capacity = capacity
        self.sink = sink
        tzset()
    }

    /// Standard error, written with `write(2)` until every byte is out (or it fails).
    public static let standardError = LogOutput { bytes in
        var offset = 0
        while offset < bytes.count {
            let written = Glibc.write(STDERR_FILENO, bytes.baseAddress! + offset, bytes.count - offset)
            if written > 0 {
                offset += written
            } else if written < 0 && errno == EINTR {
                continue
            } else {
                return
            }
        }
    }

    /// The local time to the second, as `StreamLogHandler` writes it (`2026-11-28T03:21:25+0000`).
    public func timestamp() -> String {
        var now = time(nil)
        if let text = clock.withLock({ $0.second == now ? $0.text : nil }) { return text }
        var parts = tm()
        var buffer = [CChar](repeating: 0, count: 64)
        guard localtime_r(&now, &parts) != nil, strftime(&buffer, buffer.count, "%Y-%m-%dT%H:%M:%S%z", &parts) > 0 else {
            return "<unknown>"
        }
        let text = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        clock.withLock { $0 = (now, text) }
        return text
    }

    /// Writes one line (or queues it behind the write under way).
    public func write(_ line: String) {
        var line = line
        let first: [UInt8]? = line.withUTF8 { bytes in
            state.withLock { state -> [UInt8]? in
                if state.writing {
                    if state.pending.count + bytes.count > capacity {
                        state.dropped += 1
                    } else {
                        state.pending.append(contentsOf: bytes)
                    }
                    return nil
                }
                state.writing = true
                return Array(bytes)
            }
        }
        guard var chunk = first else { return }
        while true {
            chunk.withUnsafeBytes { sink($0) }
            let next: [UInt8]? = state.withLock { state in
                guard !state.pending.isEmpty || state.dropped > 0 else {
                    state.writing = false
                    return nil
                }
                var bytes: [UInt8] = []
                if state.dropped > 0 {
                    bytes = Array(
                        "\(timestamp()) warning pushgate: [PushgateCore] \(state.dropped) log lines dropped: the log output did not keep up\n"
                            .utf8)
                    state.dropped = 0
                }
                if bytes.isEmpty {
                    swap(&bytes, &state.pending)
                } else {
                    bytes.append(contentsOf: state.pending)
                    state.pending.removeAll(keepingCapacity: true)
                }
                return bytes
            }
            guard let next else { return }
            chunk = next
        }
    }
}

extension LineLogHandler {
    /// Every logger of the process writes lines to standard error at `level`.
    public static func bootstrap(level: Logger.Level) {
        LoggingSystem.bootstrap { label in LineLogHandler(label: label, level: level, output: .standardError) }
    }
}
