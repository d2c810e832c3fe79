#if canImport(Glibc)
    import Glibc
#endif

/// Every connection is a file: allow as many as the system lets this process have.
enum FileDescriptorLimit {
    static func raiseToHardLimit() {
        var limit = rlimit()
        guard getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit) == 0, limit.rlim_cur < limit.rlim_max else { return }
        limit.rlim_cur = limit.rlim_max
        _ = setrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit)
    }
}

/// A crash leaves a line in the log: on SIGSEGV, SIGBUS, SIGILL, SIGFPE or SIGABRT, one
/// `pushgate: fatal signal N` line goes to standard error (with `write`, the only safe call in
/// a signal handler), then the signal's default action runs (core dump, exit status 128+N).
/// For a symbolicated backtrace run with `SWIFT_BACKTRACE=enable=yes` (see docs/api.md, "Crashes").
enum FatalSignalLog {
    static func install() {
        // Swift's own backtracer, when enabled, installs its handlers and prints more.
        if let setting = getenv("SWIFT_BACKTRACE"), String(cString: setting).contains("enable=yes") { return }
        // An alternate stack, so that a stack overflow can still be reported.
        let size = 64 * 1024
        var stack = stack_t()
        stack.ss_sp = UnsafeMutableRawPointer.allocate(byteCount: size, alignment: 16)
        stack.ss_size = size
        stack.ss_flags = 0
        sigaltstack(&stack, nil)
        let message = Array("pushgate: fatal signal 00\n".utf8)
        let buffer = UnsafeMutablePointer<UInt8>.allocate(capacity: message.count)
        buffer.initialize(from: message, count: message.count)
        fatalMessage = UnsafeMutableBufferPointer(start: buffer, count: message.count)
        for number in [SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT] {
            var action = sigaction()
            action.__sigaction_handler.sa_handler = { number in
                if let message = fatalMessage, let base = message.baseAddress {
                    message[message.count - 3] = UInt8(0x30 + (number / 10) % 10)
                    message[message.count - 2] = UInt8(0x30 + number % 10)
                    _ = write(2, base, message.count)
                }
                raise(number)  // SA_RESETHAND restored the default action: core dump, status 128+N
            }
            action.sa_flags = Int32(SA_ONSTACK) | Int32(bitPattern: UInt32(SA_RESETHAND))
            sigaction(number, &action, nil)
        }
    }
}

/// The fatal line, written from the signal handler without allocating. Set once by
/// ``FatalSignalLog/install()`` before any handler can run; only the handler writes to it after.
nonisolated(unsafe) private var fatalMessage: UnsafeMutableBufferPointer<UInt8>?
