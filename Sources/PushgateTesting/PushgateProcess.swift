import Foundation
import Synchronization
import Testing

/// Runs the built `pushgate` binary, as a user would.
public struct PushgateProcess {
    public static let repositoryRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().path

    public static var executable: String {
        // The test bundle sits next to the products in .build/<configuration>/.
        let bundleDirectory = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        for candidate in [bundleDirectory, bundleDirectory.deletingLastPathComponent()] {
            let path = candidate.appendingPathComponent("pushgate").path
            if FileManager.default.isExecutableFile(atPath: path) { return path }
        }
        return repositoryRoot + "/.build/debug/pushgate"
    }

    public struct Result: Sendable {
        public var status: Int32
        public var stdout: String
        public var stderr: String
    }

    /// Runs the binary on a thread of its own: an async test must never block one of the few
    /// cooperative threads while the process it waits for needs this process's gateway to answer.
    public static func run(_ arguments: [String], in directory: String = repositoryRoot) async throws -> Result {
        try await withCheckedThrowingContinuation { continuation in
            Thread {
                continuation.resume(with: Swift.Result { try run(arguments, in: directory) as Result })
            }.start()
        }
    }

    public static func run(_ arguments: [String], in directory: String = repositoryRoot) throws -> Result {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.currentDirectoryURL = URL(fileURLWithPath: directory)
        let out = Pipe()
        let err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try process.run()
        let stdout = out.fileHandleForReading.readDataToEndOfFile()
        let stderr = err.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return Result(
            status: process.terminationStatus, stdout: String(decoding: stdout, as: UTF8.self),
            stderr: String(decoding: stderr, as: UTF8.self))
    }
}

/// A started process whose output is collected on threads of its own (never blocking the
/// cooperative pool), with waits that poll.
///
/// Invariant (why `@unchecked Sendable`): the output lives behind a `Mutex`; the `Process` is
/// started once in `init` and afterwards only read (`isRunning`, `terminationStatus`) or signalled,
/// which Foundation allows from any thread.
public final class RunningProcess: @unchecked Sendable {
    public let process = Process()
    private let output = Mutex("")

    public init(_ arguments: [String]) throws {
        process.executableURL = URL(fileURLWithPath: PushgateProcess.executable)
        process.arguments = arguments
        let out = Pipe()
        let err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try process.run()
        for pipe in [out, err] {
            Thread { [self] in
                while true {
                    let chunk = pipe.fileHandleForReading.availableData
                    if chunk.isEmpty { break }
                    self.output.withLock { $0 += String(decoding: chunk, as: UTF8.self) }
                }
            }.start()
        }
    }

    /// Everything written so far, stdout and stderr interleaved.
    public var text: String { output.withLock { $0 } }

    /// Waits until the output contains `needle`; the output so far when it does.
    public func waitFor(_ needle: String, seconds: Double = 30) async throws -> String {
        let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
        while ContinuousClock.now < deadline {
            let text = self.text
            if text.contains(needle) { return text }
            try await Task.sleep(for: .milliseconds(50))
        }
        Issue.record("timed out waiting for '\(needle)'; output so far:\n\(text)")
        throw CancellationError()
    }

    public var isRunning: Bool { process.isRunning }

    /// Waits for the process to exit by itself; its status.
    public func waitForExit(seconds: Double) async throws -> Int32 {
        let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
        while process.isRunning, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(50)) }
        if process.isRunning {
            Issue.record("the process did not exit within \(seconds) s; killed. Output so far:\n\(text.suffix(3000))")
            kill(process.processIdentifier, SIGKILL)
        }
        return try await reaped()
    }

    /// The exit status once the process has been reaped (`terminationStatus` traps before that).
    private func reaped() async throws -> Int32 {
        while process.isRunning { try await Task.sleep(for: .milliseconds(20)) }
        try await Task.sleep(for: .milliseconds(100))  // the reader threads drain the pipes
        return process.terminationStatus
    }

    /// `pushgate serve --config config --port 0`, once it listens; with its base URL.
    public static func serve(config: String) async throws -> (process: RunningProcess, server: String) {
        let process = try RunningProcess(["serve", "--config", config, "--port", "0"])
        let marker = "listening on http://127.0.0.1:"
        let log = try await process.waitFor(marker)
        let port = try #require(log.components(separatedBy: marker).last?.prefix(while: \.isNumber).description)
        return (process, "http://127.0.0.1:\(port)")
    }

    /// SIGTERM, then the exit status (after at most `seconds`).
    public func terminate(seconds: Double = 20) async throws -> Int32 {
        process.terminate()
        let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
        while process.isRunning, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(50)) }
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        return try await reaped()
    }
}
