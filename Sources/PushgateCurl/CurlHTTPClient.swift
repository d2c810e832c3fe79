internal import CCurl
import Foundation
import Synchronization

/// An HTTP client on libcurl's multi interface: one dedicated thread drives `curl_multi_poll`,
/// multiplexing concurrent requests as HTTP/2 streams; callers use async/await and never block in
/// curl.
///
/// ```swift
/// let client = try CurlHTTPClient(configuration: .init(caFile: "sandbox/ca.pem"))
/// let response = try await client.execute(CurlRequest(url: "https://127.0.0.1:8443/3/device/…", body: payload))
/// await client.shutdown()
/// ```
///
/// Threading invariant (why this is `@unchecked Sendable`): the multi handle and every easy handle,
/// header list and transfer context are created, used and freed only on the loop thread. Other
/// threads touch only `shared` (behind a `Mutex`) and call `curl_multi_wakeup`, which libcurl
/// documents as safe from any thread.
public final class CurlHTTPClient: @unchecked Sendable {
    public let configuration: CurlHTTPClientConfiguration

    private let multi: UnsafeMutableRawPointer
    private let shared = Mutex(SharedState())
    private let stopped = Mutex<CheckedContinuation<Void, Never>?>(nil)
    private let loopFinished = Mutex(false)
    private var thread: Thread?

    private struct SharedState {
        var submissions: [Transfer] = []
        var cancellations: [UInt64] = []
        var isShutdown = false
        var nextID: UInt64 = 1
    }

    /// Starts the client and its loop thread.
    public init(configuration: CurlHTTPClientConfiguration = .init()) throws(CurlError) {
        CurlLibrary.initialize()
        guard let multi = curl_multi_init() else { throw CurlError(CURLE_OUT_OF_MEMORY) }
        self.multi = multi
        self.configuration = configuration
        pushgate_multi_setopt_long(multi, CURLMOPT_PIPELINING, Int(CURLPIPE_MULTIPLEX))
        pushgate_multi_setopt_long(multi, CURLMOPT_MAX_HOST_CONNECTIONS, configuration.maximumConnectionsPerHost)
        pushgate_multi_setopt_long(multi, CURLMOPT_MAX_CONCURRENT_STREAMS, configuration.maximumStreamsPerConnection)
        let thread = Thread { [self] in self.runLoop() }
        thread.name = "pushgate-curl"
        self.thread = thread
        thread.start()
    }

    /// Sends `request` and returns the server's answer (any status).
    ///
    /// - Throws: ``CurlError`` for transport failures (connect, TLS, timeout, reset, GOAWAY), and
    ///   a `.local` error when the client is shut down or the task is cancelled.
    public func execute(_ request: CurlRequest) async throws(CurlError) -> CurlResponse {
        let id = shared.withLock { state -> UInt64 in
            defer { state.nextID += 1 }
            return state.nextID
        }
        let result: Result<CurlResponse, CurlError> = await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Result<CurlResponse, CurlError>, Never>) in
                let transfer = Transfer(id: id, request: request, continuation: continuation)
                let accepted = shared.withLock { state -> Bool in
                    guard !state.isShutdown else { return false }
                    state.submissions.append(transfer)
                    return true
                }
                if accepted {
                    curl_multi_wakeup(multi)
                } else {
                    transfer.finish(.failure(CurlError.shutDown))
                }
            }
        } onCancel: {
            shared.withLock { $0.cancellations.append(id) }
            curl_multi_wakeup(multi)
        }
        return try result.get()
    }

    /// Stops accepting requests, fails every request still in flight with a shutdown error (each
    /// caller resumed exactly once), and waits for the loop thread to free every handle.
    public func shutdown() async {
        let alreadyFinished = loopFinished.withLock { $0 }
        if alreadyFinished { return }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let finished = loopFinished.withLock { finished -> Bool in
                if !finished { stopped.withLock { $0 = continuation } }
                return finished
            }
            if finished {
                continuation.resume()
                return
            }
            shared.withLock { $0.isShutdown = true }
            curl_multi_wakeup(multi)
        }
    }

    // MARK: Loop thread

    private func runLoop() {
        var active: [UInt64: Transfer] = [:]
        var byHandle: [UnsafeMutableRawPointer: UInt64] = [:]
        while true {
            let (submissions, cancellations, isShutdown) = shared.withLock { state in
                defer {
                    state.submissions.removeAll()
                    state.cancellations.removeAll()
                }
                return (state.submissions, state.cancellations, state.isShutdown)
            }
            for transfer in submissions {
                do {
                    let easy = try transfer.start(configuration: configuration)
                    curl_multi_add_handle(multi, easy)
                    active[transfer.id] = transfer
                    byHandle[easy] = transfer.id
                } catch {
                    transfer.finish(.failure(error))
                }
            }
            for id in cancellations {
                guard let transfer = active.removeValue(forKey: id), let easy = transfer.easy else {
                    // Not started yet: it may still be in a later batch of submissions.
                    shared.withLock { state in
                        if let index = state.submissions.firstIndex(where: { $0.id == id }) {
                            state.submissions.remove(at: index).finish(.failure(CurlError.cancelled))
                        }
                    }
                    continue
                }
                byHandle[easy] = nil
                curl_multi_remove_handle(multi, easy)
                transfer.finish(.failure(CurlError.cancelled))
                transfer.cleanUp()
            }
            if isShutdown {
                for (_, transfer) in active {
                    if let easy = transfer.easy { curl_multi_remove_handle(multi, easy) }
                    transfer.finish(.failure(CurlError.shutDown))
                    transfer.cleanUp()
                }
                active.removeAll()
                let late = shared.withLock { state in
                    defer { state.submissions.removeAll() }
                    return state.submissions
                }
                for transfer in late { transfer.finish(.failure(CurlError.shutDown)) }
                curl_multi_cleanup(multi)
                let continuation = loopFinished.withLock { finished -> CheckedContinuation<Void, Never>? in
                    finished = true
                    return stopped.withLock { value in
                        defer { value = nil }
                        return value
                    }
                }
                continuation?.resume()
                return
            }

            var running: Int32 = 0
            curl_multi_perform(multi, &running)
            var remaining: Int32 = 0
            while let message = curl_multi_info_read(multi, &remaining) {
                guard message.pointee.msg == CURLMSG_DONE, let easy = message.pointee.easy_handle,
                    let id = byHandle.removeValue(forKey: easy), let transfer = active.removeValue(forKey: id)
                else { continue }
                let code = message.pointee.data.result
                curl_multi_remove_handle(multi, easy)
                transfer.complete(code: code)
                transfer.cleanUp()
            }
            var ready: Int32 = 0
            curl_multi_poll(multi, nil, 0, 1000, &ready)
        }
    }
}

extension CurlError {
    /// The client was shut down with the request unanswered.
    public static let shutDown = CurlError(local: "the HTTP client was shut down")
    /// The caller's task was cancelled.
    public static let cancelled = CurlError(local: "the request was cancelled")
}
