internal import CCurl
import Foundation
import Synchronization

/// An HTTP client on libcurl's multi interface: one dedicated thread drives
/// `curl_multi_socket_action` from epoll (curl's socket and timer callbacks say what to watch
/// and when), multiplexing concurrent requests as HTTP/2 streams; callers use async/await and
/// never block in curl.
///
/// ```swift
/// let client = try CurlHTTPClient(configuration: .init(caFile: "sandbox/ca.pem"))
/// let response = try await client.execute(CurlRequest(url: "https://127.0.0.1:8443/3/device/…", body: payload))
/// await client.shutdown()
/// ```
///
/// Threading invariant (why this is `@unchecked Sendable`): the multi handle and every easy handle,
/// header list and transfer context are created, used and freed only on the loop thread. Other
/// threads touch only `shared` (behind a `Mutex`) and write to the loop's eventfd to wake it.
public final class CurlHTTPClient: @unchecked Sendable {
    public let configuration: CurlHTTPClientConfiguration

    private let multi: UnsafeMutableRawPointer
    /// The loop waits on `epoll`; other threads wake it through `wakeup` (an eventfd).
    ///
    /// Lifetime invariant: the loop thread closes both on its way out, so other threads may
    /// signal `wakeup` only inside `shared.withLock`, and only while `isShutdown` is false. The
    /// loop closes it after it has read `isShutdown == true` in a later critical section of that
    /// lock, so every signal happens before the close (a second `shutdown()` caller waking the
    /// loop after it had finished once touched freed memory).
    private let epoll: Int32
    private let wakeup: Int32
    private let shared = Mutex(SharedState())
    /// Whether the loop has freed everything, and the `shutdown()` callers waiting for it: every
    /// caller is resumed exactly once, however many call at once.
    private let stopping = Mutex(StopState())
    private var thread: Thread?

    private struct StopState {
        var finished = false
        var waiters: [CheckedContinuation<Void, Never>] = []
    }

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
        let epoll = pushgate_epoll_create()
        let wakeup = pushgate_wakeup_create()
        guard epoll >= 0, wakeup >= 0, pushgate_epoll_watch(epoll, wakeup, CURL_POLL_IN) == 0 else {
            let reason = String(cString: strerror(errno))
            if epoll >= 0 { close(epoll) }
            if wakeup >= 0 { close(wakeup) }
            curl_multi_cleanup(multi)
            throw CurlError(local: "could not create the curl loop's epoll descriptors: \(reason)")
        }
        self.multi = multi
        self.epoll = epoll
        self.wakeup = wakeup
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
    /// `onBody`, when given, sees each piece of the response body as it arrives (on the loop
    /// thread: keep it short), for streamed answers; the response still carries the whole body.
    public func execute(_ request: CurlRequest, onBody: (@Sendable ([UInt8]) -> Void)? = nil) async throws(CurlError) -> CurlResponse {
        let id = shared.withLock { state -> UInt64 in
            defer { state.nextID += 1 }
            return state.nextID
        }
        let result: Result<CurlResponse, CurlError> = await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Result<CurlResponse, CurlError>, Never>) in
                let transfer = Transfer(id: id, request: request, onBody: onBody, completion: .single(continuation))
                // Wake the loop only when the queue goes from empty to non-empty: a busy loop drains
                // the queue on its next turn anyway, and every wakeup is a syscall. Under the lock:
                // see `multi`.
                let accepted = shared.withLock { state -> Bool in
                    guard !state.isShutdown else { return false }
                    state.submissions.append(transfer)
                    if state.submissions.count == 1 { pushgate_wakeup_signal(wakeup) }
                    return true
                }
                if !accepted { transfer.finish(.failure(CurlError.shutDown)) }
            }
        } onCancel: {
            cancel(id..<(id + 1))
        }
        return try result.get()
    }

    /// Sends every request at once (one submission, one wakeup of the loop) and returns the answers
    /// in order when the last is in. The way to send a fan-out: no task or continuation per request.
    public func execute(batch requests: [CurlRequest]) async -> [Result<CurlResponse, CurlError>] {
        await execute(batch: requests, each: nil)
    }

    /// Sends every request at once, as ``execute(batch:)``, and hands each answer to `each` (with
    /// the request's index) as it arrives, on the loop's thread: keep it short. Returns when every
    /// request is answered and every `each` call has returned.
    public func execute(
        batch requests: [CurlRequest], each: @escaping @Sendable (Int, Result<CurlResponse, CurlError>) -> Void
    ) async {
        _ = await execute(batch: requests, each: Optional(each))
    }

    private func execute(
        batch requests: [CurlRequest], each: (@Sendable (Int, Result<CurlResponse, CurlError>) -> Void)?
    ) async -> [Result<CurlResponse, CurlError>] {
        guard !requests.isEmpty else { return [] }
        let count = UInt64(requests.count)
        let firstID = shared.withLock { state -> UInt64 in
            defer { state.nextID += count }
            return state.nextID
        }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<[Result<CurlResponse, CurlError>], Never>) in
                let collector = BatchCollector(count: requests.count, each: each, continuation: continuation)
                let transfers = requests.enumerated().map { index, request in
                    Transfer(id: firstID + UInt64(index), request: request, completion: .batch(collector, index: index))
                }
                let accepted = shared.withLock { state -> Bool in
                    guard !state.isShutdown else { return false }
                    let wasEmpty = state.submissions.isEmpty
                    state.submissions.append(contentsOf: transfers)
                    if wasEmpty { pushgate_wakeup_signal(wakeup) }
                    return true
                }
                if !accepted {
                    for transfer in transfers { transfer.finish(.failure(CurlError.shutDown)) }
                }
            }
        } onCancel: {
            cancel(firstID..<(firstID + count))
        }
    }

    /// Asks the loop to fail the transfers `ids` with ``CurlError/cancelled``. Once the client is
    /// shutting down the loop is already awake and fails everything on its way out; its eventfd
    /// may be closed, so it is not woken again (see `epoll`).
    private func cancel(_ ids: Range<UInt64>) {
        shared.withLock { state in
            state.cancellations.append(contentsOf: ids)
            if !state.isShutdown { pushgate_wakeup_signal(wakeup) }
        }
    }

    /// Stops accepting requests, fails every request still in flight with a shutdown error (each
    /// caller resumed exactly once), and waits for the loop thread to free every handle.
    public func shutdown() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let finished = stopping.withLock { state -> Bool in
                if !state.finished { state.waiters.append(continuation) }
                return state.finished
            }
            if finished {
                continuation.resume()
                return
            }
            // Only the caller that starts the shutdown wakes the loop, under the lock: the loop may
            // close its eventfd as soon as it sees the flag (see `epoll`).
            shared.withLock { state in
                guard !state.isShutdown else { return }
                state.isShutdown = true
                pushgate_wakeup_signal(wakeup)
            }
        }
    }

    // MARK: Loop thread

    private func runLoop() {
        // curl says which sockets to watch and when to call it back; `events` carries that to epoll
        // and to the wait below. It lives (and curl holds its address) until the multi handle is freed.
        let events = LoopEvents(epoll: epoll)
        let context = Unmanaged.passUnretained(events).toOpaque()
        pushgate_multi_setopt_socket_function(multi, curlSocketCallback)
        pushgate_multi_setopt_pointer(multi, CURLMOPT_SOCKETDATA, context)
        pushgate_multi_setopt_timer_function(multi, curlTimerCallback)
        pushgate_multi_setopt_pointer(multi, CURLMOPT_TIMERDATA, context)
        defer { withExtendedLifetime(events) {} }
        let headerLists = HeaderListCache()
        var readyDescriptors = [Int32](repeating: 0, count: 64)
        var readyMasks = [Int32](repeating: 0, count: 64)
        var active: [UInt64: Transfer] = [:]
        // Easy handles are reused: creating one per request (and its buffers) costs more than the
        // request itself at high rates. Only the loop thread touches the pool.
        var pool: [UnsafeMutableRawPointer] = []
        let recycle: (UnsafeMutableRawPointer) -> Void = { pool.append($0) }
        // Backpressure: curl gets at most as many transfers as its connections can carry at once.
        // Handing it more makes it re-scan a pending list on every event (O(n) per transfer).
        let capacity =
            configuration.maximumConnectionsPerHost
            * (configuration.httpVersion == .http2 ? configuration.maximumStreamsPerConnection : 1)
        var waiting: [Transfer] = []
        var waitingHead = 0
        while true {
            let (submissions, cancellations, isShutdown) = shared.withLock { state in
                defer {
                    state.submissions.removeAll()
                    state.cancellations.removeAll()
                }
                return (state.submissions, state.cancellations, state.isShutdown)
            }
            waiting.append(contentsOf: submissions)
            while active.count < capacity, waitingHead < waiting.count {
                let transfer = waiting[waitingHead]
                waitingHead += 1
                let handle: UnsafeMutableRawPointer
                if let pooled = pool.popLast() {
                    handle = pooled
                } else {
                    do throws(CurlError) {
                        handle = try Transfer.makeHandle(configuration: configuration)
                    } catch {
                        transfer.finish(.failure(error))
                        continue
                    }
                }
                // A transfer curl refuses has been answered with the typed error already.
                guard transfer.admit(on: handle, to: multi, headerLists: headerLists, recycle: recycle) else { continue }
                active[transfer.id] = transfer
            }
            if waitingHead > 4096, waitingHead * 2 > waiting.count {
                waiting.removeFirst(waitingHead)
                waitingHead = 0
            }
            if !cancellations.isEmpty {
                // A cancelled batch names many ids: one pass over what waits, not one per id.
                var notStarted = Set<UInt64>()
                for id in cancellations {
                    guard let transfer = active.removeValue(forKey: id), let easy = transfer.easy else {
                        notStarted.insert(id)
                        continue
                    }
                    curl_multi_remove_handle(multi, easy)
                    transfer.finish(.failure(CurlError.cancelled))
                    transfer.cleanUp(returning: recycle)
                }
                if !notStarted.isEmpty {
                    // Not started yet: waiting here, or still in the shared queue.
                    let waitingCancelled = waiting[waitingHead...].filter { notStarted.contains($0.id) }
                    if !waitingCancelled.isEmpty {
                        waiting = waiting[waitingHead...].filter { !notStarted.contains($0.id) }
                        waitingHead = 0
                    }
                    let queuedCancelled = shared.withLock { state in
                        let found = state.submissions.filter { notStarted.contains($0.id) }
                        if !found.isEmpty { state.submissions.removeAll { notStarted.contains($0.id) } }
                        return found
                    }
                    for transfer in waitingCancelled + queuedCancelled { transfer.finish(.failure(CurlError.cancelled)) }
                }
            }
            if isShutdown {
                for (_, transfer) in active {
                    if let easy = transfer.easy { curl_multi_remove_handle(multi, easy) }
                    transfer.finish(.failure(CurlError.shutDown))
                    transfer.cleanUp()
                }
                active.removeAll()
                for transfer in waiting[waitingHead...] { transfer.finish(.failure(CurlError.shutDown)) }
                waiting.removeAll()
                let late = shared.withLock { state in
                    defer { state.submissions.removeAll() }
                    return state.submissions
                }
                for transfer in late { transfer.finish(.failure(CurlError.shutDown)) }
                for easy in pool { curl_easy_cleanup(easy) }
                pool.removeAll()
                curl_multi_cleanup(multi)
                headerLists.freeAll()
                close(epoll)
                close(wakeup)
                let waiters = stopping.withLock { state -> [CheckedContinuation<Void, Never>] in
                    state.finished = true
                    defer { state.waiters.removeAll() }
                    return state.waiters
                }
                for waiter in waiters { waiter.resume() }
                return
            }

            // Completions freed capacity while transfers wait: start them before sleeping.
            let moreToStart = waitingHead < waiting.count && active.count < capacity
            var timeout: Int32 = 1000
            if moreToStart {
                timeout = 0
            } else if events.deadline >= 0 {
                timeout = Int32(clamping: max(0, min(1000, events.deadline - pushgate_monotonic_milliseconds())))
            }
            let ready = readyDescriptors.withUnsafeMutableBufferPointer { descriptors in
                readyMasks.withUnsafeMutableBufferPointer { masks in
                    pushgate_epoll_wait(epoll, descriptors.baseAddress, masks.baseAddress, Int32(descriptors.count), timeout)
                }
            }
            var running: Int32 = 0
            var failure = CURLM_OK
            for index in 0..<Int(max(ready, 0)) {
                let descriptor = readyDescriptors[index]
                if descriptor == wakeup {
                    pushgate_wakeup_drain(wakeup)
                    continue
                }
                let code = curl_multi_socket_action(multi, descriptor, readyMasks[index], &running)
                // A socket curl closed earlier in this same round is no longer its: not a failure.
                if code != CURLM_OK, code != CURLM_BAD_SOCKET { failure = code }
            }
            if events.deadline >= 0, pushgate_monotonic_milliseconds() >= events.deadline {
                events.deadline = -1
                let code = pushgate_multi_socket_timeout(multi, &running)
                if code != CURLM_OK { failure = code }
            }
            if failure != CURLM_OK {
                // The multi handle itself failed (out of memory, internal error): every transfer on
                // it is lost. Fail them with the typed error rather than spin.
                let error = CurlError(multi: failure)
                for (_, transfer) in active {
                    if let easy = transfer.easy { curl_multi_remove_handle(multi, easy) }
                    transfer.finish(.failure(error))
                    transfer.cleanUp()
                }
                active.removeAll()
            }
            var remaining: Int32 = 0
            while let message = curl_multi_info_read(multi, &remaining) {
                guard message.pointee.msg == CURLMSG_DONE, let easy = message.pointee.easy_handle,
                    let transfer = Transfer.of(easy), active.removeValue(forKey: transfer.id) != nil
                else { continue }
                let code = message.pointee.data.result
                curl_multi_remove_handle(multi, easy)
                transfer.complete(code: code)
                transfer.cleanUp(returning: recycle)
            }
        }
    }
}

/// What curl's socket and timer callbacks tell the loop. Loop thread only.
private final class LoopEvents {
    let epoll: Int32
    /// When curl wants `curl_multi_socket_action(CURL_SOCKET_TIMEOUT)` called, in monotonic
    /// milliseconds; -1 for never.
    var deadline: Int64 = -1

    init(epoll: Int32) { self.epoll = epoll }
}

private let curlSocketCallback: pushgate_socket_callback = { _, socket, what, context, _ in
    guard let context else { return -1 }
    let events = Unmanaged<LoopEvents>.fromOpaque(context).takeUnretainedValue()
    // A closed descriptor has left the epoll set by itself; failing to remove it is not an error.
    if pushgate_epoll_watch(events.epoll, socket, what) != 0, what != CURL_POLL_REMOVE { return -1 }
    return 0
}

private let curlTimerCallback: pushgate_timer_callback = { _, timeout, context in
    guard let context else { return -1 }
    let events = Unmanaged<LoopEvents>.fromOpaque(context).takeUnretainedValue()
    events.deadline = timeout < 0 ? -1 : pushgate_monotonic_milliseconds() + Int64(timeout)
    return 0
}

extension CurlError {
    /// The client was shut down with the request unanswered.
    public static let shutDown = CurlError(local: "the HTTP client was shut down")
    /// The caller's task was cancelled.
    public static let cancelled = CurlError(local: "the request was cancelled")
}
