import Foundation
import Pushgate
import Testing

/// Notification ids sort by the time they were made (UUID version 7), so that a store's indexes
/// keyed by them grow at their end.
@Suite struct TimeOrderedIDTests {
    @Test func idsAreVersionSevenUUIDsThatSortByTheirTime() throws {
        let start = Timestamp(secondsSinceEpoch: 1_800_000_000.5)
        let ids = (0..<1000).map { TimeOrderedID.make(at: start.adding(seconds: Double($0) / 100)) }
        for id in ids {
            let uuid = try #require(UUID(uuidString: id))
            #expect(uuid.uuidString.lowercased() == id, "lowercase with hyphens")
            let bytes = withUnsafeBytes(of: uuid.uuid) { Array($0) }
            #expect(bytes[6] >> 4 == 7, "version 7: \(id)")
            #expect(bytes[8] >> 6 == 0b10, "RFC 9562 variant: \(id)")
        }
        // The first 48 bits are the milliseconds since the epoch.
        let milliseconds = String(1_800_000_000_500, radix: 16)
        #expect(
            ids[0].replacingOccurrences(of: "-", with: "").hasPrefix(String(repeating: "0", count: 12 - milliseconds.count) + milliseconds))
        // Ten milliseconds apart: in order as text (as a store's index sorts them).
        #expect(ids == ids.sorted())
        #expect(Set(ids).count == ids.count)
        // Made in the same millisecond: still distinct (74 random bits).
        let same = (0..<1000).map { _ in TimeOrderedID.make(at: start) }
        #expect(Set(same).count == 1000)
    }
}
