import Foundation
import Testing

@testable import PushgateCurl

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

    /// Wave 1 kept one waiter: of two concurrent callers, the first was never resumed.
    @Test(.timeLimit(.minutes(1))) func everyConcurrentShutdownCallerIsResumedOnce() async throws {
        for _ in 0..<20 {
            let client = try CurlHTTPClient()
            let resumed = await withTaskGroup(of: Int.self) { group in
                for _ in 0..<8 {
                    group.addTask {
                        await client.shutdown()
                        return 1
                    }
                }
                return await group.reduce(0, +)
            }
            #expect(resumed == 8)
            await client.shutdown()  // and once more after the loop has finished
        }
    }

    /// The error text comes from curl's error buffer, which must outlive the transfer's setup
    /// (wave 1 handed curl a pointer that was only valid inside a closure).
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
            #expect(error.description.contains("127.0.0.1") || error.description.contains("onnect"), "\(error.description)")
        }
    }

    @Test func requestsAfterShutdownFailWithAShutdownError() async throws {
        let client = try CurlHTTPClient()
        await client.shutdown()
        await #expect(throws: CurlError.shutDown) { try await client.execute(CurlRequest(url: "http://127.0.0.1:1/")) }
    }
}
