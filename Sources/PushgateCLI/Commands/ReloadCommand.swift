import ArgumentParser
import Foundation

/// `pushgate reload`: asks a running `pushgate serve` to read its configuration again (SIGHUP).
struct ReloadCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "reload", abstract: "Make a running gateway read its configuration again (sends it SIGHUP).",
        discussion: """
            Templates, push-service credentials, hub rules and users are taken without a restart; \
            sends in flight finish with what they started with. A configuration that does not load \
            is refused: the gateway logs why and keeps running with the one it has. Under systemd, \
            `systemctl reload pushgate` does the same.
            """)

    @Option(name: .customLong("pid-file"), help: "The file `pushgate serve --pid-file` writes.")
    var pidFile: String?

    @Option(help: "The process id of `pushgate serve`.")
    var pid: Int32?

    func validate() throws {
        guard (pidFile == nil) != (pid == nil) else { throw ValidationError("give --pid-file or --pid (one of them)") }
    }

    func run() throws {
        var target = pid ?? 0
        if let pidFile {
            let text: String
            do { text = try String(contentsOfFile: pidFile, encoding: .utf8) } catch {
                throw ValidationError("cannot read \(pidFile): is `pushgate serve --pid-file \(pidFile)` running?")
            }
            guard let read = Int32(text.trimmingCharacters(in: .whitespacesAndNewlines)), read > 1 else {
                throw ValidationError("\(pidFile) holds no process id")
            }
            target = read
        }
        guard target > 1 else { throw ValidationError("--pid must be a process id") }
        guard kill(target, SIGHUP) == 0 else {
            throw ValidationError("cannot signal process \(target): \(String(cString: strerror(errno)))")
        }
        print("sent SIGHUP to \(target): the gateway logs whether the configuration was reloaded")
    }
}
