import Synchronization

/// Holds a responder set after construction; reads are lock-protected.
final class ResponderBox: Sendable {
    private let storage = Mutex<(any SandboxHTTPResponder)?>(nil)

    var value: (any SandboxHTTPResponder)? { storage.withLock { $0 } }

    func setTarget(_ responder: any SandboxHTTPResponder) { storage.withLock { $0 = responder } }
}
