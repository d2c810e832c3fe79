import Pushgate
import Testing

@Suite struct TokenBucketsTests {
    @Test func aKeyGetsItsBurstThenTheSteadyRate() {
        var buckets = TokenBuckets(ratePerSecond: 2, burst: 3)
        for _ in 0..<3 { #expect(buckets.take("a", now: 100) == .proceed) }
        #expect(buckets.take("a", now: 100) == .wait(seconds: 1))
        // Another key has a bucket of its own.
        #expect(buckets.take("b", now: 100) == .proceed)
        // Half a second refills one token at 2/s, and only one.
        #expect(buckets.take("a", now: 100.5) == .proceed)
        #expect(buckets.take("a", now: 100.5) == .wait(seconds: 1))
        // A long pause refills up to the burst, never past it.
        for _ in 0..<3 { #expect(buckets.take("a", now: 1000) == .proceed) }
        #expect(buckets.take("a", now: 1000) == .wait(seconds: 1))
    }

    @Test func theWaitIsUntilTheNextToken() {
        var buckets = TokenBuckets(ratePerSecond: 0.1, burst: 1)
        #expect(buckets.take("a", now: 0) == .proceed)
        #expect(buckets.take("a", now: 0) == .wait(seconds: 10))
        #expect(buckets.take("a", now: 4) == .wait(seconds: 6))
        #expect(buckets.take("a", now: 10) == .proceed)
        // A clock that goes back refills nothing.
        #expect(buckets.take("a", now: 5) == .wait(seconds: 10))
    }

    @Test func madeUpKeysKeepTheTableBounded() {
        var buckets = TokenBuckets(ratePerSecond: 1, burst: 5, capacity: 100)
        for index in 0..<10_000 { _ = buckets.take("key-\(index)", now: Double(index) / 1000) }
        #expect(buckets.count <= 100)
        // A key that is being limited right now is among those kept.
        for _ in 0..<5 { _ = buckets.take("hot", now: 10) }
        for index in 0..<40 { _ = buckets.take("new-\(index)", now: 10) }
        #expect(buckets.take("hot", now: 10) == .wait(seconds: 1))
    }
}
