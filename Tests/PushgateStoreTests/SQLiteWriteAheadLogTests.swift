import Foundation
import Pushgate
import PushgateSQLite
import Testing

/// The SQLite store's write-ahead log stays bounded under sustained one-row writes: its
/// checkpoints run (a statement left on a row makes every automatic checkpoint fail, and then
/// 4,455 reservations grow the log to 72 MB while the database file is never written).
@Suite struct SQLiteWriteAheadLogTests {
    @Test func twentyThousandRowsInOneRowWritesAndBatchesKeepTheLogBoundedAndReachTheDatabaseFile() async throws {
        let path = NSTemporaryDirectory() + "pushgate-wal-\(UUID().uuidString).sqlite"
        defer { for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) } }
        let store = try await SQLiteStore.open(path: path)
        func size(_ suffix: String) -> Int {
            ((try? FileManager.default.attributesOfItem(atPath: path + suffix))?[.size] as? NSNumber)?.intValue ?? 0
        }
        let initialDatabase = size("")
        var largestLog = 0
        let now = Timestamp(secondsSinceEpoch: 1_700_000_000)
        // 5,000 one-row transactions of the reservation path (a delete, a count left on its row, an
        // insert): without checkpoints about 80 MB of log, as the probe saw (4,455 made 72 MB).
        for index in 0..<5_000 {
            _ = try await store.createRegistrationID(app: .default, owner: "user\(index % 50)", maximumReserved: 1_000, now: now)
            if index % 250 == 0 { largestLog = max(largestLog, size("-wal")) }
        }
        // And 15,000 registrations in batches of 100: 20,000 rows in all.
        for batch in 0..<150 {
            let registrations = try (0..<100).map { offset in
                try Registration(
                    id: try RegistrationID("wal-\(batch)-\(offset)"),
                    handle: DeviceHandle(uncheckedPlatform: .apns, value: String(format: "%064x", batch * 100 + offset)),
                    tags: [try Tag("news")], owner: "carol")
            }
            try await store.restore(registrations, now: now)
            largestLog = max(largestLog, size("-wal"))
        }
        largestLog = max(largestLog, size("-wal"))
        // A checkpoint every 1,000 frames of 4 KiB, and the log cut to 16 MiB when it starts over.
        #expect(largestLog < 16 << 20, "the write-ahead log reached \(largestLog) bytes")
        #expect(size("") > initialDatabase, "the database file was never written (\(size("")) bytes)")
        await store.close()
    }
}
