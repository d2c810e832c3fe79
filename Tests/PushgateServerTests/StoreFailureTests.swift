import Foundation
import Pushgate
import PushgateConfig
import PushgateDispatch
import PushgateGateway
import PushgateSQLite
import PushgateServer
import PushgateTesting
import Synchronization
import Testing

@Suite struct StoreFailureTests {
    /// A store failure mid-send is no bare 503 that throws away what was delivered, and no handle
    /// removal is dropped silently (`try?`).
    @Test func aStoreFailureMidSendReportsWhatWasDeliveredAndCountsUnappliedRemovals() async throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let loaded = try ConfigurationLoader.load(file: root.appendingPathComponent("config.json").path)
        // The first page of the audience is claimed, then the disk fails; no handle change can be applied.
        let failedApplies = Mutex(0)
        let pagesClaimed = Mutex(0)
        let store = FaultyStore(InMemoryRegistrationStore()) { operation throws(StoreError) in
            switch operation {
            case .claimPage:
                if pagesClaimed.withLock({ count in
                    defer { count += 1 }
                    return count
                }) > 0 {
                    throw StoreError(.storage, "disk I/O error")
                }
            case .apply:
                failedApplies.withLock { $0 += 1 }
                throw StoreError(.storage, "disk I/O error")
            default: break
            }
        }
        // 1,200 of carol's devices: the first page (500) is listed, then the store fails.
        var registrations: [Registration] = []
        for index in 0..<1_200 {
            registrations.append(
                try Registration(
                    id: try RegistrationID(String(format: "f%07d", index)),
                    handle: DeviceHandle(uncheckedPlatform: .apns, value: String(format: "%064x", index + 1)),
                    tags: [try .username("carol")], owner: "carol"))
        }
        try await store.restore(registrations, now: Timestamp(secondsSinceEpoch: 0))
        // APNs answers every other device "Unregistered": a handle removal for the store.
        let transport = InMemoryPushTransport { request in
            let gone = (Int(request.url.suffix(1), radix: 16) ?? 0) % 2 == 0
            return .success(
                gone
                    ? PushHTTPResponse(status: 410, body: Array(#"{"reason":"Unregistered","timestamp":1}"#.utf8))
                    : PushHTTPResponse(status: 200, headers: [HTTPHeader(name: "apns-id", value: UUID().uuidString)]))
        }
        let provider = APNSProvider(
            endpoint: "https://apns.example", topic: "com.example.app", tokens: nil, transport: transport, policy: RetryPolicy(),
            clock: SystemClock())
        let metrics = GatewayMetrics()
        let gateway = Gateway(
            app: loaded.defaultApp, store: store, dispatcher: Dispatcher(providers: [provider]), shared: Gateway.Shared(metrics: metrics))
        let prepared = try await gateway.sends.prepare(
            SendCommand(
                route: .tutorialNotifications, sender: .user(AuthenticatedUser(name: "bob", isAdmin: false)), audience: .user("carol"),
                content: .message(body: Array(#""hi""#.utf8), secure: false), platforms: "apns"))
        let outcome = await gateway.sends.deliver(prepared)

        #expect(outcome.ending == .interrupted)
        #expect(outcome.result.error?.contains("500 targets were reached") == true, "\(outcome.result.error ?? "no error")")
        #expect(outcome.result.successCount == 250)
        #expect(outcome.result.platforms.first?.total == 500)
        #expect(failedApplies.withLock { $0 } > 0)
        let exposition = String(decoding: metrics.exposition(), as: UTF8.self)
        #expect(exposition.contains("pushgate_handle_updates_failed_total 250"), "\(exposition.prefix(400))")
    }

    /// The disk failing at an import's third batch (the fault hook asked before each batch) rolls
    /// back the two batches written before it: the SQLite file holds what it held, and the store
    /// goes on working.
    @Test func aStoreFailureMidImportRollsBackTheBatchesAlreadyWritten() async throws {
        let path = NSTemporaryDirectory() + "pushgate-import-\(UUID().uuidString).sqlite"
        defer { for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) } }
        let sqlite = try await SQLiteStore.open(path: path)
        let asked = Mutex(0)
        let store = FaultyStore(sqlite) { operation throws(StoreError) in
            guard operation == .importRegistrations else { return }
            if asked.withLock({ count in
                count += 1
                return count
            }) == 3 {
                throw StoreError(.storage, "disk I/O error")
            }
        }
        func device(_ index: Int) throws -> Registration {
            try Registration(
                id: try RegistrationID(String(format: "d%07d", index)),
                handle: DeviceHandle(uncheckedPlatform: .apns, value: String(format: "%064x", index + 1)), tags: [try .username("dana")],
                owner: "dana")
        }
        let before = try device(0)
        try await sqlite.restore([before], now: Timestamp(secondsSinceEpoch: 0))
        let batches = try (0..<4).map { batch in try (1...100).map { try device(batch * 100 + $0) } }
        let stream = AsyncStream<[Registration]> { continuation in
            for batch in batches { continuation.yield(batch) }
            continuation.finish()
        }
        do {
            _ = try await store.importRegistrations(stream, now: Timestamp(secondsSinceEpoch: 0))
            Issue.record("an import the disk failed was written")
        } catch {
            guard case .store(let failure) = error else { throw error }
            #expect(failure.message == "disk I/O error")
        }
        // The hook was asked before the import and before batches 2 and 3.
        #expect(asked.withLock { $0 } == 3)
        var left: [RegistrationID] = []
        for try await page in sqlite.registrations(
            matching: nil, platforms: .all, app: .default, batchSize: 1000, now: Timestamp(secondsSinceEpoch: 0))
        {
            left += page.map(\.id)
        }
        #expect(left == [before.id])
        try await sqlite.restore([try device(1)], now: Timestamp(secondsSinceEpoch: 0))
        #expect(try await sqlite.registration(id: try device(1).id, app: .default) != nil)
    }
}
