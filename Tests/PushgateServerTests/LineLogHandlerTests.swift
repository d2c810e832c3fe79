import Dispatch
import Foundation
import Glibc
import Logging
import PushgateGateway
import Synchronization
import Testing

/// The gateway's log lines: the same text as swift-log's `StreamLogHandler` (what reads the log
/// keeps working), whole lines however many threads log at once, and bounded memory when the
/// output does not keep up.
@Suite struct LineLogHandlerTests {
    /// Collects what a ``LogOutput`` writes, each `write` apart.
    final class Capture: Sendable {
        let writes = Mutex<[[UInt8]]>([])
        var text: String { String(decoding: writes.withLock { $0.joined() }, as: UTF8.self) }
        var lines: [Substring] { text.split(separator: "\n") }
        func sink(_ bytes: UnsafeRawBufferPointer) { writes.withLock { $0.append(Array(bytes)) } }
    }

    final class StringStream: TextOutputStream, @unchecked Sendable {
        var text = ""
        func write(_ string: String) { text += string }
    }

    /// Drops the time (`2026-11-28T03:21:25+0000 `) from a line, checking its shape.
    static func withoutTime(_ line: Substring) -> Substring {
        let time = line.prefix { $0 != " " }
        #expect(time.count == 24, "\(line)")
        #expect(time.wholeMatch(of: /\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[+-]\d{4}/) != nil, "\(line)")
        return line.dropFirst(time.count + 1)
    }

    @Test func writesTheLinesStreamLogHandlerWrites() {
        let capture = Capture()
        let stream = StringStream()
        var ours = Logger(label: "pushgate") { label in
            LineLogHandler(label: label, level: .debug, output: LogOutput(sink: capture.sink))
        }
        var theirs = Logger(label: "pushgate") { label in
            var handler = StreamLogHandler(label: label, stream: stream, metadataProvider: nil)
            handler.logLevel = .debug
            return handler
        }
        ours[metadataKey: "hb.request.id"] = "42"
        theirs[metadataKey: "hb.request.id"] = "42"
        for index in 0..<2 {
            let logger = index == 0 ? ours : theirs
            logger.info("send finished", metadata: ["state": "Completed", "succeeded": "3", "a": .array(["1", "2"])])
            logger.notice("plain message")
            logger.debug("with a map", metadata: ["map": .dictionary(["k": "v"])])
            logger.trace("below the level: not written")
            logger.warning("no metadata of its own")
        }
        let ourLines = capture.lines.map(Self.withoutTime)
        let theirLines = stream.text.split(separator: "\n").map(Self.withoutTime)
        #expect(ourLines.count == 4)
        #expect(ourLines == theirLines)
        #expect(
            ourLines.first
                == #"info pushgate: a=["1", "2"] hb.request.id=42 state=Completed succeeded=3 [PushgateServerTests] send finished"#)
    }

    /// Runs `body(index)` on `count` threads of their own (not the cooperative pool's, which a
    /// logger waiting for its line would hold), returning when all have returned.
    static func onThreads(_ count: Int, _ body: @escaping @Sendable (Int) -> Void) -> DispatchGroup {
        let group = DispatchGroup()
        for index in 0..<count {
            group.enter()
            Thread {
                body(index)
                group.leave()
            }.start()
        }
        return group
    }

    @Test func linesFromManyThreadsStayWholeAndEachIsWrittenWhenItsLogCallReturns() {
        let capture = Capture()
        let output = LogOutput { bytes in
            // A slow output, so that lines queue behind a write and go out together.
            usleep(200)
            capture.sink(bytes)
        }
        let logger = Logger(label: "load") { LineLogHandler(label: $0, level: .info, output: output) }
        let unwritten = Mutex(0)
        Self.onThreads(8) { thread in
            for index in 0..<250 {
                logger.info("line", metadata: ["task": "\(thread)", "index": "\(index)"])
                // Every 25th: the whole text is read each time.
                if index % 25 == 0, !capture.text.contains("index=\(index) task=\(thread) ") { unwritten.withLock { $0 += 1 } }
            }
        }.wait()
        #expect(unwritten.withLock { $0 } == 0, "a log call returns once its line is written")
        let lines = capture.lines.map(Self.withoutTime)
        #expect(lines.count == 2_000)
        var seen = Set<String>()
        for line in lines {
            let match = line.wholeMatch(of: /info load: index=(\d+) task=(\d) \[PushgateServerTests\] line/)
            #expect(match != nil, "\(line)")
            if let match { seen.insert("\(match.2)/\(match.1)") }
        }
        #expect(seen.count == 2_000)
        let writes = capture.writes.withLock { $0 }
        #expect(writes.allSatisfy { $0.last == UInt8(ascii: "\n") }, "every write ends a line")
        #expect(writes.count < 2_000, "lines logged during a write share the next")
        #expect(output.backlog == (0, 0))
    }

    @Test func aStuckOutputHoldsAtMostItsCapacityAndSaysHowManyLinesItDropped() {
        let capture = Capture()
        let entered = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let first = Mutex(true)
        let output = LogOutput(capacity: 1_000) { bytes in
            if first.withLock({ stuck in
                defer { stuck = false }
                return stuck
            }) {
                entered.signal()
                release.wait()
            }
            capture.sink(bytes)
        }
        let logger = Logger(label: "stuck") { LineLogHandler(label: $0, level: .info, output: output) }
        let writer = Self.onThreads(1) { _ in logger.info("the write that blocks") }
        entered.wait()
        // 100 threads log while the output is stuck: the lines that fit wait, the others are dropped.
        let message = Logger.Message(stringLiteral: String(repeating: "x", count: 60))
        let loggers = Self.onThreads(100) { _ in logger.info(message) }
        while true {
            let backlog = output.backlog
            if backlog.lines - 1 + backlog.dropped == 100 { break }
            usleep(1_000)
        }
        let waiting = output.backlog.lines - 1
        // Each line is 24 + 1 + 100-odd bytes: about 8 fit in 1,000 bytes.
        #expect(waiting > 0 && waiting < 10)
        release.signal()
        writer.wait()
        loggers.wait()

        let lines = capture.lines.map(Self.withoutTime)
        #expect(lines.filter { $0.hasSuffix(message.description) }.count == waiting)
        #expect(lines.first == "info stuck: [PushgateServerTests] the write that blocks")
        #expect(lines.contains("warning pushgate: [PushgateGateway] \(100 - waiting) log lines dropped: the log output did not keep up"))
        // Writing works again once the output does.
        logger.info("after")
        #expect(capture.lines.last.map(Self.withoutTime) == "info stuck: [PushgateServerTests] after")
        #expect(output.backlog == (0, 0))
    }
}
