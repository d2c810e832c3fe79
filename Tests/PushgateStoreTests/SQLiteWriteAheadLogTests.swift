import Foundation
import Pushgate
import PushgateStore
import Testing

/// The SQLite store's write-ahead log stays bounded under sustained one-row writes: its
/// checkpoints run (a statement left on a row makes every automatic checkpoint fail, and then
/// 4,455 reservations grow the log to 72 MB while the database file is never written).
@Suite struct SQLiteWriteAheadLogTests {
    @Test func twentyThousandOneRowWritesKeepTheLogBoundedAndReachTheDatabaseFile() async throws {
        let path = NSTemporaryDirectory() + "pushgate-wal-\(UUID().uuidString).sqlite"
        defer { for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) } }
        let store = try await SQLiteStore.open(path: path)
        func size(_ suffix: String) -> Int {
            ((try? FileManager.default.attributesOfItem(atPath: path + suffix))?[.size] as? NSNumber)?.intValue ?? 0
        }
        let initialDatabase = size("")
        var largestLog = 0
        let now = Timestamp(secondsSinceEpoch: 1_700_000_000)
        for index in 0..<20_000 {
            // The reservation path: a delete, a count left on its row, an insert, in one transaction.
            _ = try await store.createRegistrationID(app: .default, owner: "user\(index % 50)", maximumReserved: 1_000, now: now)
            if index % 500 == 0 { largestLog = max(largestLog, size("-wal")) }
        }
        largestLog = max(largestLog, size("-wal"))
        // A checkpoint every 1,000 frames of 4 KiB, and the log cut to 16 MiB when it starts over.
        #expect(largestLog < 16 << 20, "the write-ahead log reached \(largestLog) bytes")
        #expect(size("") > initialDatabase, "the database file was never written (\(size("")) bytes)")
        await store.close()
    }
}
