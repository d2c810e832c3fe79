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
    /// Its standard input is the file `standardInput` (empty by default).
    public static func run(
        _ arguments: [String], in directory: String = repositoryRoot, standardInput: String = "/dev/null"
    ) async throws -> Result {
        try await withCheckedThrowingContinuation { continuation in
            Thread {
                continuation.resume(with: Swift.Result { try run(arguments, in: directory, standardInput: standardInput) as Result })
            }.start()
        }
    }

    public static func run(
        _ arguments: [String], in directory: String = repositoryRoot, standardInput: String = "/dev/null"
    ) throws -> Result {
        let child = try ChildProcess(executable: executable, arguments: arguments, directory: directory, standardInput: standardInput)
        let status = child.waitUntilFinished()
        return Result(status: status, stdout: child.standardOutput, stderr: child.standardError)
    }
}

/// A started process whose output is collected on threads of its own (never blocking the
/// cooperative pool), with waits that poll.
public final class RunningProcess: Sendable {
    public let child: ChildProcess

    public init(_ arguments: [String]) throws {
        child = try ChildProcess(executable: PushgateProcess.executable, arguments: arguments)
    }

    public var processIdentifier: pid_t { child.processIdentifier }

    /// Everything written so far, stdout and stderr interleaved.
    public var text: String { child.text }

    /// Waits until the output contains `needle`; the output so far when it does.
    public func waitFor(_ needle: String, seconds: Double = 30) async throws -> String {
        let text = try await eventually(timeout: .milliseconds(Int(seconds * 1000)), every: .milliseconds(50)) {
            self.text
        } until: {
            $0.contains(needle)
        }
        if text.contains(needle) { return text }
        Issue.record("timed out waiting for '\(needle)'; output so far:\n\(text)")
        throw CancellationError()
    }

    public var isRunning: Bool { child.isRunning }

    /// Waits for the process to exit by itself; its status.
    public func waitForExit(seconds: Double) async throws -> Int32 {
        _ = try await eventually(timeout: .milliseconds(Int(seconds * 1000)), every: .milliseconds(50)) { !child.isRunning }
        if child.isRunning {
            Issue.record("the process did not exit within \(seconds) s; killed. Output so far:\n\(text.suffix(3000))")
            child.signal(SIGKILL)
        }
        return try await reaped()
    }

    /// The exit status once the process has been reaped and its output read to the end (or, if
    /// something else still holds its pipes, 5 s after it was reaped).
    private func reaped() async throws -> Int32 {
        // It has exited or was killed: reaped at once, its output read within 5 s.
        _ = try await eventually(timeout: .seconds(60), every: .milliseconds(20)) { !child.isRunning }
        let status = try await eventually(timeout: .seconds(5), every: .milliseconds(20)) {
            child.finishedStatus
        } until: {
            $0 != nil
        }
        return status ?? child.exitStatus ?? -1
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
        child.signal(SIGTERM)
        _ = try await eventually(timeout: .milliseconds(Int(seconds * 1000)), every: .milliseconds(50)) { !child.isRunning }
        if child.isRunning { child.signal(SIGKILL) }
        return try await reaped()
    }
}
