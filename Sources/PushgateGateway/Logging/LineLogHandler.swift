import Foundation
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
    /// Formatted when a line is written, not when it is set: Hummingbird sets a request id on
    /// every request's logger, and most requests log nothing.
    public var metadata: Logger.Metadata = [:]
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
        var merged = metadata
        if let provided = metadataProvider?.get(), !provided.isEmpty { merged.merge(provided) { _, provided in provided } }
        if let explicit = event.metadata { merged.merge(explicit) { _, explicit in explicit } }
        if let error = event.error {
            merged["error.message"] = "\(error)"
            merged["error.type"] = "\(String(reflecting: type(of: error)))"
        }
        let pretty = Self.prettify(merged)
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
/// Lines are written as concurrent commits are: a thread that logs while no line is being written
/// writes its own line and every line waiting, in one `write`; a thread that logs while another
/// writes waits (as it waited for `StreamLogHandler`'s lock) until a write has taken its line, and
/// may be the one to make it. So `log` returns once its line is written, each `write` holds whole
/// lines, and no thread writes more than one batch. Memory stays bounded: while the output does not
/// keep up (a full pipe nobody reads), lines past ``capacity`` bytes are dropped and counted (their
/// threads do not wait), and the next write says how many.
public final class LogOutput: @unchecked Sendable {
    /// The bytes to write, all at once, returning when they are written (or cannot be).
    public typealias Sink = @Sendable (UnsafeRawBufferPointer) -> Void

    public let capacity: Int
    private let sink: Sink
    /// Guards every `var` below.
    private let condition = NSCondition()
    private var pending: [UInt8] = []
    private var writing = false
    private var dropped = 0
    /// Lines are numbered as they are queued; every line up to `written` is out.
    private var queued = 0
    private var written = 0
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
    /// The time zone is read once, when the output is made.
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

    /// Lines queued and not yet written, and lines dropped since the last write (for tests).
    package var backlog: (lines: Int, dropped: Int) {
        condition.lock()
        defer { condition.unlock() }
        return (queued - written, dropped)
    }

    /// Writes one line, returning once it is written (or dropped).
    public func write(_ line: String) {
        var line = line
        condition.lock()
        defer { condition.unlock() }
        let fits = line.withUTF8 { bytes -> Bool in
            guard !writing || pending.count + bytes.count <= capacity else { return false }
            pending.append(contentsOf: bytes)
            return true
        }
        guard fits else {
            dropped += 1
            return
        }
        queued += 1
        let mine = queued
        while written < mine {
            if writing {
                condition.wait()
                continue
            }
            // This thread writes what is queued, its own line among it.
            writing = true
            var batch: [UInt8] = []
            if dropped > 0 {
                let notice = "warning pushgate: [PushgateGateway] \(dropped) log lines dropped: the log output did not keep up"
                batch = Array("\(timestamp()) \(notice)\n".utf8)
                dropped = 0
            }
            batch.append(contentsOf: pending)
            pending.removeAll(keepingCapacity: true)
            let through = queued
            condition.unlock()
            batch.withUnsafeBytes { sink($0) }
            condition.lock()
            written = through
            writing = false
            condition.broadcast()
        }
    }
}

extension LineLogHandler {
    /// Every logger of the process writes lines to standard error at `level`.
    public static func bootstrap(level: Logger.Level) {
        LoggingSystem.bootstrap { label in LineLogHandler(label: label, level: level, output: .standardError) }
    }
}
