import CCurl
import Foundation
import PushgateCurl
import Synchronization
import Testing

@Suite struct CurlHTTPClientTests {
    /// A port nothing listens on (bound, then closed).
    static func closedPort() -> Int {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(descriptor) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
                _ = bind(descriptor, pointer, length)
                return getsockname(descriptor, pointer, &length)
            }
        }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    /// With a single waiter kept, the first of two concurrent callers would never be resumed. The
    /// callers are unstructured tasks so that one never resumed fails the test instead of hanging it.
    @Test(.timeLimit(.minutes(1))) func everyConcurrentShutdownCallerIsResumedOnce() async throws {
        final class Counter: Sendable {
            let value = Mutex(0)
        }
        for _ in 0..<20 {
            let client = try CurlHTTPClient()
            let resumed = Counter()
            for _ in 0..<8 {
                Task {
                    await client.shutdown()
                    resumed.value.withLock { $0 += 1 }
                }
            }
            let deadline = ContinuousClock.now + .seconds(10)
            while resumed.value.withLock({ $0 }) < 8, ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(2))
            }
            try #require(resumed.value.withLock { $0 } == 8)
            await client.shutdown()  // and once more after the loop has finished
        }
    }

    /// The error text comes from curl's error buffer (it names the port; `curl_easy_strerror`
    /// does not), read back from pooled handles reused across 50 failures. A pointer valid only
    /// inside `withUnsafeMutableBufferPointer`, handed to curl, would be undefined behaviour that
    /// does not show here (the array does not move), so this guards the buffer's plumbing, not the UB.
    @Test func aTransportFailureCarriesCurlsOwnErrorText() async throws {
        let client = try CurlHTTPClient(configuration: .init(httpVersion: .http1, maximumConnectionsPerHost: 4))
        let port = Self.closedPort()
        let results = await client.execute(batch: (0..<50).map { _ in CurlRequest(url: "http://127.0.0.1:\(port)/") })
        await client.shutdown()
        for result in results {
            guard case .failure(let error) = result else {
                Issue.record("a closed port answered")
                continue
            }
            #expect(error.kind == .connect, "\(error)")
            #expect(error.message.contains("port \(port)"), "\(error.description)")
        }
    }

    /// Ignoring what `curl_multi_add_handle` answers would leave a transfer curl refused with its
    /// caller suspended for ever. Here curl really refuses (the easy handle is on another multi
    /// handle already), through the admission step the loop uses.
    @Test(.timeLimit(.minutes(1))) func aTransferCurlRefusesFailsItsCallerWithTheMultiCode() async throws {
        CurlLibrary.initialize()
        let multi = try #require(curl_multi_init())
        let other = try #require(curl_multi_init())
        defer {
            curl_multi_cleanup(multi)
            curl_multi_cleanup(other)
        }
        let handle = try Transfer.makeHandle(configuration: .init())
        try #require(curl_multi_add_handle(other, handle) == CURLM_OK)
        var recycled = 0
        let result = await withCheckedContinuation { (continuation: CheckedContinuation<Result<CurlResponse, CurlError>, Never>) in
            let transfer = Transfer(id: 1, request: CurlRequest(url: "http://127.0.0.1:1/"), completion: .single(continuation))
            let admitted = transfer.admit(on: handle, to: multi, headerLists: HeaderListCache(), recycle: { _ in recycled += 1 })
            if admitted {
                // Fail the test rather than hang it.
                curl_multi_remove_handle(multi, handle)
                transfer.finish(.failure(CurlError(local: "curl accepted a handle added elsewhere")))
            }
        }
        #expect(throws: CurlError(multi: CURLM_ADDED_ALREADY)) { try result.get() }
        #expect(recycled == 0, "a handle curl refused must not go back to the pool")
    }

    /// A fan-out's requests share one header list; a list is freed once no transfer uses it and
    /// eight newer sets have pushed it out, and never while a transfer still holds it.
    @Test func requestsWithTheSameHeadersShareOneListUntilTheLastIsDone() {
        let cache = HeaderListCache()
        func headers(_ topic: String) -> [(name: String, value: String)] { [("apns-topic", topic), ("apns-push-type", "alert")] }
        let first = cache.acquire(headers("a"))
        let second = cache.acquire(headers("a"))
        #expect(first != nil && first == second)
        let other = cache.acquire(headers("b"))
        #expect(other != first)
        #expect(cache.liveLists == 2)
        cache.release(second!)
        for index in 0..<8 {
            let list = cache.acquire(headers("newer \(index)"))
            cache.release(list!)
        }
        // "a" and "b" are out of the recent eight, but `first` and `other` still hold them.
        #expect(cache.liveLists == 10)
        cache.release(first!)
        cache.release(other!)
        #expect(cache.liveLists == 8, "evicted lists are freed when their last user lets go")
        // The list's text is what curl sends: each header once, and no Expect: 100-continue.
        var lines: [String] = []
        var node = cache.acquire(headers("c"))
        while let current = node {
            lines.append(String(cString: current.pointee.data))
            node = current.pointee.next
        }
        #expect(lines == ["apns-topic: c", "apns-push-type: alert", "Expect:"])
        cache.freeAll()
        #expect(cache.liveLists == 0)
    }

    /// The write callback's decision: a body is kept up to the request's limit; the piece that
    /// crosses it is kept in part and answered short (curl then aborts that transfer), and only
    /// the bytes kept reach `onBody`. Without a limit everything is kept.
    @Test func theBodyIsKeptUpToTheRequestsLimitAndTheCrossingPieceIsRefused() async throws {
        final class Seen: Sendable {
            let bytes = Mutex(0)
        }
        func receive(_ pieces: [Int], limit: Int?) async -> (taken: [Int], transfer: Transfer, seen: Int) {
            let seen = Seen()
            var taken: [Int] = []
            var kept: Transfer?
            _ = await withCheckedContinuation { (continuation: CheckedContinuation<Result<CurlResponse, CurlError>, Never>) in
                let transfer = Transfer(
                    id: 1, request: CurlRequest(url: "http://127.0.0.1:1/", maximumResponseBodyBytes: limit),
                    onBody: { piece in seen.bytes.withLock { $0 += piece.count } }, completion: .single(continuation))
                for count in pieces {
                    let piece = [UInt8](repeating: 0x61, count: count)
                    taken.append(piece.withUnsafeBufferPointer { transfer.receivedBody($0) })
                }
                kept = transfer
                transfer.finish(.failure(.cancelled))
            }
            return (taken, kept!, seen.bytes.withLock { $0 })
        }
        let cut = await receive([16_384, 16_384, 16_384], limit: 20_000)
        #expect(cut.taken == [16_384, 3_616, 0])
        #expect(cut.transfer.responseBody.count == 20_000)
        #expect(cut.transfer.isBodyTruncated)
        #expect(cut.seen == 20_000)
        let exact = await receive([10_000, 10_000], limit: 20_000)
        #expect(exact.taken == [10_000, 10_000])
        #expect(!exact.transfer.isBodyTruncated, "a body of exactly the limit is whole")
        let unlimited = await receive([16_384, 16_384], limit: nil)
        #expect(unlimited.taken == [16_384, 16_384])
        #expect(unlimited.transfer.responseBody.count == 32_768 && !unlimited.transfer.isBodyTruncated)
    }

    @Test func requestsAfterShutdownFailWithAShutdownError() async throws {
        let client = try CurlHTTPClient()
        await client.shutdown()
        await #expect(throws: CurlError.shutDown) { try await client.execute(CurlRequest(url: "http://127.0.0.1:1/")) }
    }
}
