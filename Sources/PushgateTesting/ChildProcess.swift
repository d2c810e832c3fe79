import CSpawn
import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// A child process started with `posix_spawn`, its standard output and error read on threads of
/// their own, and its exit status collected by a thread blocked in `waitpid`.
///
/// Not Foundation's `Process`: on Linux (through Swift 6.3.1) its `run()` copies each
/// `/proc/self/fd` entry's whole 256-byte name and crashes when an entry ends a page of glibc's
/// readdir buffer (swift-corelibs-foundation PR #5472), which a test process with hundreds of
/// sockets open hit now and then. The child gets descriptors 0 (`/dev/null`, or the file given),
/// 1 and 2 (pipes) and nothing else (`closefrom(3)`), its own process group (as `Process` did),
/// and this process's environment.
public final class ChildProcess: Sendable {
    public let processIdentifier: pid_t
    private let state = Mutex(State())

    private struct State {
        var stdout: [UInt8] = []
        var stderr: [UInt8] = []
        /// Both in arrival order, for a test that waits for a line in either.
        var combined: [UInt8] = []
        var openStreams = 2
        var status: Int32?
    }

    public enum SpawnError: Error, CustomStringConvertible {
        case failed(String, Int32)
        public var description: String {
            switch self {
            case .failed(let step, let code): "\(step) failed: \(String(cString: strerror(code)))"
            }
        }
    }

    /// Starts `executable` in `directory` (this process's by default), its standard input read
    /// from the file `standardInput`.
    public init(executable: String, arguments: [String], directory: String? = nil, standardInput: String = "/dev/null") throws {
        var outPipe: [Int32] = [-1, -1]
        var errPipe: [Int32] = [-1, -1]
        guard pipe2(&outPipe, O_CLOEXEC) == 0 else { throw SpawnError.failed("pipe2", errno) }
        guard pipe2(&errPipe, O_CLOEXEC) == 0 else {
            let code = errno
            close(outPipe[0])
            close(outPipe[1])
            throw SpawnError.failed("pipe2", code)
        }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var steps: [(String, Int32)] = [
            ("open \(standardInput)", posix_spawn_file_actions_addopen(&actions, 0, standardInput, O_RDONLY, 0)),
            ("dup2", posix_spawn_file_actions_adddup2(&actions, outPipe[1], 1)),
            ("dup2", posix_spawn_file_actions_adddup2(&actions, errPipe[1], 2)),
            ("closefrom", posix_spawn_file_actions_addclosefrom_np(&actions, 3)),
            ("setflags", posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETPGROUP))),
            ("setpgroup", posix_spawnattr_setpgroup(&attributes, 0)),
        ]
        if let directory { steps.append(("chdir", posix_spawn_file_actions_addchdir_np(&actions, directory))) }
        var pid: pid_t = 0
        var result: Int32 = 0
        if let failed = steps.first(where: { $0.1 != 0 }) {
            result = failed.1
        } else {
            let argv: [UnsafeMutablePointer<CChar>?] = ([executable] + arguments).map { strdup($0) } + [nil]
            defer { for pointer in argv { free(pointer) } }
            result = argv.withUnsafeBufferPointer { pointer in
                posix_spawn(&pid, executable, &actions, &attributes, pointer.baseAddress!, environ)
            }
        }
        close(outPipe[1])
        close(errPipe[1])
        guard result == 0 else {
            close(outPipe[0])
            close(errPipe[0])
            throw SpawnError.failed("posix_spawn \(executable)", result)
        }
        processIdentifier = pid
        for (descriptor, isError) in [(outPipe[0], false), (errPipe[0], true)] {
            Thread { [self] in drain(descriptor, isError: isError) }.start()
        }
        Thread { [self] in reap() }.start()
    }

    private func drain(_ descriptor: Int32, isError: Bool) {
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if count < 0, errno == EINTR { continue }
            if count <= 0 { break }
            let chunk = buffer[..<count]
            state.withLock {
                if isError { $0.stderr += chunk } else { $0.stdout += chunk }
                $0.combined += chunk
            }
        }
        close(descriptor)
        state.withLock { $0.openStreams -= 1 }
    }

    private func reap() {
        var status: Int32 = 0
        while waitpid(processIdentifier, &status, 0) < 0 {
            guard errno == EINTR else {
                status = 127 << 8
                break
            }
        }
        // As Foundation's Process reports it: the exit code, or the number of the signal that ended it.
        let signal = status & 0x7f
        let code = signal == 0 ? (status >> 8) & 0xff : signal
        state.withLock { $0.status = code }
    }

    /// Whether the child has not yet been reaped.
    public var isRunning: Bool { state.withLock { $0.status == nil } }

    /// The exit status once reaped; nil before.
    public var exitStatus: Int32? { state.withLock { $0.status } }

    /// The exit status once reaped and its output read to the end; nil before.
    public var finishedStatus: Int32? { state.withLock { $0.openStreams == 0 ? $0.status : nil } }

    /// Everything written so far, standard output and error interleaved as they arrived.
    public var text: String { state.withLock { String(decoding: $0.combined, as: UTF8.self) } }
    public var standardOutput: String { state.withLock { String(decoding: $0.stdout, as: UTF8.self) } }
    public var standardError: String { state.withLock { String(decoding: $0.stderr, as: UTF8.self) } }

    public func signal(_ number: Int32) {
        if isRunning { kill(processIdentifier, number) }
    }

    /// Blocks the calling thread (never a cooperative one) until the child has exited and its
    /// output has been read to the end.
    public func waitUntilFinished() -> Int32 {
        while true {
            if let status = finishedStatus { return status }
            usleep(2_000)
        }
    }
}
