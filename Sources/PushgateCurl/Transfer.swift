package import CCurl
import Foundation
import Synchronization

/// One request in flight: its easy handle, header list, body and response buffers.
///
/// Invariant: everything but `finish` runs on the client's loop thread. `finish` runs on the loop
/// thread too, except for a transfer the loop never saw (submitted after shutdown), which its
/// caller's thread finishes before sharing it; so one thread finishes each transfer, and
/// clearing `completion` makes any later call a no-op: the caller is resumed exactly once.
package final class Transfer: @unchecked Sendable {
    let id: UInt64
    let request: CurlRequest
    /// Called on the loop thread with each piece of the response body as it arrives.
    let onBody: (@Sendable ([UInt8]) -> Void)?
    /// Who waits for the answer: one caller, or a batch (the caller resumed once all are in).
    package enum Completion {
        case single(CheckedContinuation<Result<CurlResponse, CurlError>, Never>)
        case batch(BatchCollector, index: Int)
    }
    private var completion: Completion?
    private(set) var easy: UnsafeMutableRawPointer?
    /// The request's header list, shared with every request that has the same headers.
    private var headerList: UnsafeMutablePointer<curl_slist>?
    private var headerLists: HeaderListCache?
    private var bodyCopy: UnsafeMutableBufferPointer<UInt8>?
    /// The request's `CURLOPT_CONNECT_TO` list, when it has one; freed in ``cleanUp(returning:)``.
    private var connectToList: UnsafeMutablePointer<curl_slist>?
    /// libcurl's error text for this transfer (CURLOPT_ERRORBUFFER). Invariant: a stable
    /// allocation owned by the transfer, handed to curl in ``start(on:headerLists:)`` and taken back in
    /// ``cleanUp(returning:)`` before the easy handle goes back to the pool, so curl never holds
    /// it after this object is gone (an array's storage is only valid inside `withUnsafeMutableBufferPointer`
    /// and may move).
    private let errorBuffer: UnsafeMutablePointer<CChar>
    package private(set) var responseBody: [UInt8] = []
    /// The body went past the request's ``CurlRequest/maximumResponseBodyBytes``: the write
    /// callback kept what fitted and refused the rest, which aborted this transfer alone.
    package private(set) var isBodyTruncated = false
    var responseHeaders: [(name: String, value: String)] = []

    /// Whether a proxy variable curl follows is set (read once).
    static let proxyInEnvironment: Bool = {
        let environment = ProcessInfo.processInfo.environment
        return ["http_proxy", "https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"].contains { environment[$0]?.isEmpty == false }
    }()

    /// `PUSHGATE_CURL_VERBOSE=1` makes curl print its protocol trace to stderr (diagnostics only).
    static let verbose = ProcessInfo.processInfo.environment["PUSHGATE_CURL_VERBOSE"] == "1"

    package init(id: UInt64, request: CurlRequest, onBody: (@Sendable ([UInt8]) -> Void)? = nil, completion: Completion) {
        self.id = id
        self.request = request
        self.onBody = onBody
        self.completion = completion
        // Read only as a C string that curl terminated, or empty: the first byte is enough.
        errorBuffer = UnsafeMutablePointer<CChar>.allocate(capacity: Int(CURL_ERROR_SIZE) + 1)
        errorBuffer.initialize(to: 0)
    }

    deinit {
        errorBuffer.deallocate()
    }

    package func finish(_ result: Result<CurlResponse, CurlError>) {
        let completion = self.completion
        self.completion = nil
        switch completion {
        case .single(let continuation): continuation.resume(returning: result)
        case .batch(let collector, let index): collector.deliver(result, at: index)
        case nil: break
        }
    }

    /// Configures a pooled easy handle for this request (only what differs per request; the
    /// static options were set when the pool made the handle). Loop thread only.
    func start(on easy: UnsafeMutableRawPointer, headerLists: HeaderListCache) throws(CurlError) -> UnsafeMutableRawPointer {
        self.easy = easy
        func set(_ option: CURLoption, _ value: Int) throws(CurlError) {
            let code = pushgate_easy_setopt_long(easy, option, value)
            if code != CURLE_OK { throw CurlError(code) }
        }
        func set(_ option: CURLoption, _ value: String?) throws(CurlError) {
            let code: CURLcode
            if let value {
                code = value.withCString { pushgate_easy_setopt_string(easy, option, $0) }
            } else {
                code = pushgate_easy_setopt_pointer(easy, option, nil)
            }
            if code != CURLE_OK { throw CurlError(code) }
        }
        try set(CURLOPT_URL, request.url)
        try set(CURLOPT_FRESH_CONNECT, request.freshConnection ? 1 : 0)
        // Pooled handles keep their options: both are set (or cleared) on every request.
        if let connectTo = request.connectTo {
            connectToList = curl_slist_append(nil, connectTo)
            guard connectToList != nil else { throw CurlError(CURLE_OUT_OF_MEMORY) }
        }
        _ = pushgate_easy_setopt_slist(easy, CURLOPT_CONNECT_TO, connectToList)
        try set(CURLOPT_PROTOCOLS_STR, request.httpsOnly ? "https" : "http,https")
        errorBuffer[0] = 0
        _ = pushgate_easy_setopt_pointer(easy, CURLOPT_ERRORBUFFER, UnsafeMutableRawPointer(errorBuffer))
        switch request.method {
        case "GET":
            try set(CURLOPT_CUSTOMREQUEST, nil)
            try set(CURLOPT_HTTPGET, 1)
        case "POST":
            try set(CURLOPT_CUSTOMREQUEST, nil)
            try set(CURLOPT_POST, 1)
        default:
            try set(CURLOPT_POST, 1)
            try set(CURLOPT_CUSTOMREQUEST, request.method)
        }
        if request.method != "GET" {
            let copy = UnsafeMutableBufferPointer<UInt8>.allocate(capacity: max(request.body.count, 1))
            _ = copy.initialize(from: request.body)
            bodyCopy = copy
            try set(CURLOPT_POSTFIELDSIZE, request.body.count)
            _ = pushgate_easy_setopt_pointer(easy, CURLOPT_POSTFIELDS, UnsafeMutableRawPointer(copy.baseAddress))
        }

        let list = headerLists.acquire(request.headers)
        headerList = list
        self.headerLists = headerLists
        _ = pushgate_easy_setopt_slist(easy, CURLOPT_HTTPHEADER, list)

        let context = Unmanaged.passUnretained(self).toOpaque()
        _ = pushgate_easy_setopt_pointer(easy, CURLOPT_WRITEDATA, context)
        _ = pushgate_easy_setopt_pointer(easy, CURLOPT_HEADERDATA, context)
        _ = pushgate_easy_setopt_pointer(easy, CURLOPT_PRIVATE, context)
        return easy
    }

    /// Configures `handle` for this request and hands it to `multi`; returns whether curl now
    /// drives it. When either step fails the transfer is over: its caller is resumed with the
    /// typed error (a `CURLMcode` when `curl_multi_add_handle` refuses, rather than waiting for
    /// ever for an answer that cannot come), `handle` is released, and false is returned. A handle
    /// that only failed an option goes back to the pool through `recycle`; one curl refused is
    /// freed instead, its state unknown. Loop thread only.
    package func admit(
        on handle: UnsafeMutableRawPointer, to multi: UnsafeMutableRawPointer, headerLists: HeaderListCache,
        recycle: (UnsafeMutableRawPointer) -> Void
    ) -> Bool {
        let easy: UnsafeMutableRawPointer
        do throws(CurlError) {
            easy = try start(on: handle, headerLists: headerLists)
        } catch {
            cleanUp(returning: recycle)
            finish(.failure(error))
            return false
        }
        let added = curl_multi_add_handle(multi, easy)
        guard added == CURLM_OK else {
            cleanUp()
            finish(.failure(CurlError(multi: added)))
            return false
        }
        return true
    }

    /// A new easy handle with the options every request of a client shares.
    package static func makeHandle(configuration: CurlHTTPClientConfiguration) throws(CurlError) -> UnsafeMutableRawPointer {
        guard let easy = curl_easy_init() else { throw CurlError(CURLE_OUT_OF_MEMORY) }
        func set(_ option: CURLoption, _ value: Int) throws(CurlError) {
            let code = pushgate_easy_setopt_long(easy, option, value)
            if code != CURLE_OK {
                curl_easy_cleanup(easy)
                throw CurlError(code)
            }
        }
        func set(_ option: CURLoption, _ value: String) throws(CurlError) {
            let code = value.withCString { pushgate_easy_setopt_string(easy, option, $0) }
            if code != CURLE_OK {
                curl_easy_cleanup(easy)
                throw CurlError(code)
            }
        }
        if verbose { try set(CURLOPT_VERBOSE, 1) }
        // With no proxy in the environment, say so once: curl otherwise reads the proxy
        // variables (`https_proxy`, `all_proxy`, `no_proxy`, …) from the environment on every
        // request. With one, curl keeps following it as usual.
        if !proxyInEnvironment { try set(CURLOPT_PROXY, "") }
        try set(CURLOPT_NOSIGNAL, 1)
        try set(CURLOPT_PIPEWAIT, 1)
        // Never follow a redirect (curl's default, said here): an answer is the service's answer.
        try set(CURLOPT_FOLLOWLOCATION, 0)
        try set(CURLOPT_HTTP_VERSION, configuration.httpVersion == .http2 ? CURL_HTTP_VERSION_2TLS : CURL_HTTP_VERSION_1_1)
        try set(CURLOPT_CONNECTTIMEOUT_MS, configuration.connectTimeoutMilliseconds)
        try set(CURLOPT_TIMEOUT_MS, configuration.totalTimeoutMilliseconds)
        try set(CURLOPT_SSL_VERIFYPEER, configuration.verifyPeer ? 1 : 0)
        try set(CURLOPT_SSL_VERIFYHOST, configuration.verifyPeer ? 2 : 0)
        if let caFile = configuration.caFile { try set(CURLOPT_CAINFO, caFile) }
        if let certificate = configuration.clientCertificateFile { try set(CURLOPT_SSLCERT, certificate) }
        if let key = configuration.clientKeyFile { try set(CURLOPT_SSLKEY, key) }
        _ = pushgate_easy_setopt_write_function(easy, transferWriteCallback)
        _ = pushgate_easy_setopt_header_function(easy, transferHeaderCallback)
        return easy
    }

    /// The transfer an easy handle is running (its `CURLOPT_PRIVATE`), for the loop's completion
    /// messages. Only valid while the loop holds the transfer (in its table of active ones),
    /// which the caller checks. Loop thread only.
    static func of(_ easy: UnsafeMutableRawPointer) -> Transfer? {
        var context: UnsafeMutableRawPointer?
        guard pushgate_easy_getinfo_pointer(easy, CURLINFO_PRIVATE, &context) == CURLE_OK, let context else { return nil }
        return Unmanaged<Transfer>.fromOpaque(context).takeUnretainedValue()
    }

    /// Keeps a piece of the answer's body, up to the request's limit, and returns how many bytes
    /// it took: fewer than `chunk.count` once the limit is passed, which makes curl abort the
    /// transfer with `CURLE_WRITE_ERROR` (over HTTP/2, `RST_STREAM` on its stream alone). Loop
    /// thread only.
    package func receivedBody(_ chunk: UnsafeBufferPointer<UInt8>) -> Int {
        let room = (request.maximumResponseBodyBytes ?? .max) - responseBody.count
        guard chunk.count > room else {
            responseBody.append(contentsOf: chunk)
            onBody?(Array(chunk))
            return chunk.count
        }
        let kept = UnsafeBufferPointer(rebasing: chunk.prefix(max(room, 0)))
        if !kept.isEmpty {
            responseBody.append(contentsOf: kept)
            onBody?(Array(kept))
        }
        isBodyTruncated = true
        return kept.count
    }

    /// Turns curl's result into the caller's answer: an answer whose body was cut at the limit is
    /// an answer (its status and headers were read whole), not a failure. Loop thread only.
    func complete(code: CURLcode) {
        guard let easy else { return }
        guard code == CURLE_OK || (code == CURLE_WRITE_ERROR && isBodyTruncated) else {
            let detail = String(cString: errorBuffer)
            finish(.failure(CurlError(code, detail: detail)))
            return
        }
        var status = 0
        _ = pushgate_easy_getinfo_long(easy, CURLINFO_RESPONSE_CODE, &status)
        var version = 0
        _ = pushgate_easy_getinfo_long(easy, CURLINFO_HTTP_VERSION, &version)
        let versionText: String
        switch version {
        case CURL_HTTP_VERSION_2_0: versionText = "2"
        case CURL_HTTP_VERSION_1_0: versionText = "1.0"
        default: versionText = "1.1"
        }
        finish(
            .success(
                CurlResponse(
                    status: status, headers: responseHeaders, body: responseBody, httpVersion: versionText, isBodyTruncated: isBodyTruncated
                )))
    }

    /// Frees the header list and body copy and hands the easy handle back (to the pool, or to
    /// `curl_easy_cleanup` by default). Loop thread only, after removal from the multi handle.
    func cleanUp(returning: (UnsafeMutableRawPointer) -> Void = { curl_easy_cleanup($0) }) {
        if let easy {
            _ = pushgate_easy_setopt_pointer(easy, CURLOPT_ERRORBUFFER, nil)
            _ = pushgate_easy_setopt_pointer(easy, CURLOPT_PRIVATE, nil)
            returning(easy)
        }
        easy = nil
        if let headerList { headerLists?.release(headerList) }
        headerList = nil
        headerLists = nil
        bodyCopy?.deallocate()
        bodyCopy = nil
        if let connectToList { curl_slist_free_all(connectToList) }
        connectToList = nil
    }

    /// Records one header line given as raw bytes; a new status line (after 1xx or a redirect)
    /// starts over. Parsed on bytes: this runs on the loop thread for every header of every answer.
    func receivedHeaderLine(_ bytes: UnsafeBufferPointer<UInt8>) {
        if bytes.starts(with: [0x48, 0x54, 0x54, 0x50, 0x2F]) {  // "HTTP/"
            responseHeaders.removeAll(keepingCapacity: true)
            return
        }
        guard let colon = bytes.firstIndex(of: UInt8(ascii: ":")) else { return }
        func isSpace(_ byte: UInt8) -> Bool { byte == 0x20 || byte == 0x09 || byte == 0x0D || byte == 0x0A }
        var start = colon + 1
        var end = bytes.count
        while start < end, isSpace(bytes[start]) { start += 1 }
        while end > start, isSpace(bytes[end - 1]) { end -= 1 }
        let name = String(decoding: UnsafeBufferPointer(rebasing: bytes[..<colon]), as: UTF8.self)
        let value = String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<end]), as: UTF8.self)
        responseHeaders.append((name: name, value: value))
    }
}

/// Collects the answers of a batch and resumes its caller once, when the last one is in (from
/// whichever thread delivers it). With an `each` handler, every answer goes to it as it arrives
/// and none is kept: the caller is resumed (with no answers) after the last handler call returned.
package final class BatchCollector: Sendable {
    private struct State {
        var results: [Result<CurlResponse, CurlError>?]
        var answered: [Bool]
        var remaining: Int
        var continuation: CheckedContinuation<[Result<CurlResponse, CurlError>], Never>?
    }

    private let state: Mutex<State>
    private let each: (@Sendable (Int, Result<CurlResponse, CurlError>) -> Void)?

    init(
        count: Int, each: (@Sendable (Int, Result<CurlResponse, CurlError>) -> Void)? = nil,
        continuation: CheckedContinuation<[Result<CurlResponse, CurlError>], Never>
    ) {
        self.each = each
        state = Mutex(
            State(
                results: each == nil ? Array(repeating: nil, count: count) : [], answered: Array(repeating: false, count: count),
                remaining: count, continuation: continuation))
    }

    /// Records the answer at `index` (the first one wins); the last answer resumes the caller.
    func deliver(_ result: Result<CurlResponse, CurlError>, at index: Int) {
        let first = state.withLock { state -> Bool in
            guard !state.answered[index] else { return false }
            state.answered[index] = true
            if each == nil { state.results[index] = result }
            return true
        }
        guard first else { return }
        // Outside the lock, and before the answer counts as in: the caller resumes only after
        // every handler call has returned (a cancellation may answer from another thread).
        each?(index, result)
        let finished = state.withLock {
            state -> (CheckedContinuation<[Result<CurlResponse, CurlError>], Never>, [Result<CurlResponse, CurlError>])? in
            state.remaining -= 1
            guard state.remaining == 0, let continuation = state.continuation else { return nil }
            state.continuation = nil
            return (continuation, state.results.map { $0! })
        }
        if let (continuation, results) = finished { continuation.resume(returning: results) }
    }
}

private let transferWriteCallback: @convention(c) (UnsafeMutablePointer<CChar>?, Int, Int, UnsafeMutableRawPointer?) -> Int = {
    data, size, count, context in
    guard let data, let context else { return 0 }
    let transfer = Unmanaged<Transfer>.fromOpaque(context).takeUnretainedValue()
    let length = size * count
    return data.withMemoryRebound(to: UInt8.self, capacity: length) { bytes in
        transfer.receivedBody(UnsafeBufferPointer(start: bytes, count: length))
    }
}

private let transferHeaderCallback: @convention(c) (UnsafeMutablePointer<CChar>?, Int, Int, UnsafeMutableRawPointer?) -> Int = {
    data, size, count, context in
    guard let data, let context else { return 0 }
    let transfer = Unmanaged<Transfer>.fromOpaque(context).takeUnretainedValue()
    let length = size * count
    data.withMemoryRebound(to: UInt8.self, capacity: length) { bytes in
        transfer.receivedHeaderLine(UnsafeBufferPointer(start: bytes, count: length))
    }
    return length
}

/// Header lists shared by the requests that carry the same headers: a fan-out sends thousands of
/// requests with one set (the same authorization, topic and type), so the list is built once
/// rather than once per request. A list is freed when the last transfer using it is done and it is
/// no longer among the few most recent. Loop thread only.
package final class HeaderListCache {
    private final class Entry {
        let headers: [(name: String, value: String)]
        let list: UnsafeMutablePointer<curl_slist>?
        var users = 0
        var isRecent = true

        init(headers: [(name: String, value: String)]) {
            self.headers = headers
            var list: UnsafeMutablePointer<curl_slist>? = nil
            for header in headers {
                list = curl_slist_append(list, "\(header.name): \(header.value)")
            }
            // Never wait for "100 Continue" (WNS forbids it; push payloads are small).
            self.list = curl_slist_append(list, "Expect:")
        }

        func matches(_ other: [(name: String, value: String)]) -> Bool {
            guard headers.count == other.count else { return false }
            // The same storage (a fan-out's requests share one array, which this entry keeps
            // alive, so its address cannot have been reused): equal without comparing strings.
            let mine = headers.withUnsafeBufferPointer { $0.baseAddress }
            if mine != nil, mine == other.withUnsafeBufferPointer({ $0.baseAddress }) { return true }
            for (mine, theirs) in zip(headers, other) where mine.name != theirs.name || mine.value != theirs.value { return false }
            return true
        }
    }

    /// The most recently used sets, newest last.
    private var recent: [Entry] = []
    private var byList: [UnsafeMutablePointer<curl_slist>: Entry] = [:]

    package init() {}
    private let keep = 8

    /// Lists allocated now (for tests).
    package var liveLists: Int { byList.count }

    /// A list for `headers` (plus `Expect:`), built or shared; hand it back with ``release(_:)``.
    package func acquire(_ headers: [(name: String, value: String)]) -> UnsafeMutablePointer<curl_slist>? {
        if let index = recent.lastIndex(where: { $0.matches(headers) }) {
            let entry = recent[index]
            if index != recent.count - 1 {
                recent.remove(at: index)
                recent.append(entry)
            }
            entry.users += 1
            return entry.list
        }
        let entry = Entry(headers: headers)
        guard let list = entry.list else { return nil }
        entry.users = 1
        byList[list] = entry
        recent.append(entry)
        if recent.count > keep {
            let evicted = recent.removeFirst()
            evicted.isRecent = false
            if evicted.users == 0 { free(evicted) }
        }
        return list
    }

    package func release(_ list: UnsafeMutablePointer<curl_slist>) {
        guard let entry = byList[list] else { return }
        entry.users -= 1
        if entry.users == 0, !entry.isRecent { free(entry) }
    }

    /// Frees every list (the loop is ending; no transfer holds one).
    package func freeAll() {
        for entry in byList.values { curl_slist_free_all(entry.list) }
        byList.removeAll()
        recent.removeAll()
    }

    private func free(_ entry: Entry) {
        guard let list = entry.list else { return }
        byList[list] = nil
        curl_slist_free_all(list)
    }
}
