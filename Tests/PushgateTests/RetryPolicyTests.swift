import Pushgate
import Testing

@Suite struct RetryPolicyTests {
    let transient = DeliveryVerdict(outcome: .pnsUnavailable, retry: .afterBackoff(retryAfterSeconds: nil))

    @Test func permanentAnswersAreNeverRetried() {
        var machine = RetryStateMachine(policy: .init(), startedAt: 0, seed: 1)
        #expect(machine.record(DeliveryVerdict(outcome: .expiredChannel, retry: .never), now: 0) == .finish)
        #expect(machine.attempts == 1)
    }

    @Test func backoffGrowsExponentiallyWithinTheJitterAndStopsAtTheAttemptLimit() {
        let policy = RetryPolicy(maximumAttempts: 4, initialBackoffSeconds: 1, maximumBackoffSeconds: 100, multiplier: 2, jitter: 0.2)
        var machine = RetryStateMachine(policy: policy, startedAt: 0, seed: 42)
        var delays: [Double] = []
        while case .retry(let delay) = machine.record(transient, now: 0) { delays.append(delay) }
        #expect(delays.count == 3)
        for (index, delay) in delays.enumerated() {
            let base = [1.0, 2.0, 4.0][index]
            #expect(delay >= base * 0.8 && delay <= base * 1.2, "attempt \(index + 1): \(delay)")
        }
        #expect(machine.attempts == 4)
    }

    @Test func jitterDependsOnTheSeed() {
        var first = RetryStateMachine(policy: .init(), startedAt: 0, seed: 1)
        var second = RetryStateMachine(policy: .init(), startedAt: 0, seed: 2)
        #expect(first.record(transient, now: 0) != second.record(transient, now: 0))
    }

    @Test func retryAfterIsHonouredAndCapped() {
        var machine = RetryStateMachine(policy: .init(maximumRetryAfterSeconds: 30), startedAt: 0, seed: 3)
        #expect(
            machine.record(DeliveryVerdict(outcome: .throttled, retry: .afterBackoff(retryAfterSeconds: 5)), now: 0)
                == .retry(afterSeconds: 5))
        #expect(machine.record(DeliveryVerdict(outcome: .throttled, retry: .afterBackoff(retryAfterSeconds: 120)), now: 5) == .finish)
    }

    @Test func nothingIsRetriedPastTheDeadline() {
        var machine = RetryStateMachine(
            policy: .init(maximumAttempts: 10, initialBackoffSeconds: 1, deadlineSeconds: 10), startedAt: 100, seed: 4)
        #expect(machine.record(transient, now: 100) != .finish)
        #expect(machine.record(transient, now: 109.5) == .finish)
    }

    @Test func credentialsAreRefreshedOnceThenTheAnswerIsFinal() {
        var machine = RetryStateMachine(policy: .init(), startedAt: 0, seed: 5)
        let refused = DeliveryVerdict(outcome: .invalidCredentials, retry: .refreshCredentials)
        #expect(machine.record(refused, now: 0) == .refreshCredentialsAndRetry)
        #expect(machine.record(refused, now: 0) == .finish)
    }

    @Test func noRetriesPolicyFinishesAtOnce() {
        var machine = RetryStateMachine(policy: .none, startedAt: 0, seed: 6)
        #expect(machine.record(transient, now: 0) == .finish)
    }

    @Test func retryAfterAcceptsSecondsAndHTTPDates() {
        #expect(parseRetryAfter("120", now: 0) == 120)
        #expect(parseRetryAfter(" 7 ", now: 0) == 7)
        // Sun, 06 Nov 1994 08:49:37 GMT is 784111777.
        #expect(parseRetryAfter("Sun, 06 Nov 1994 08:49:37 GMT", now: 784_111_767) == 10)
        #expect(parseRetryAfter("Sun, 06 Nov 1994 08:49:37 GMT", now: 784_111_800) == 0)
        #expect(parseRetryAfter("soon", now: 0) == nil)
        // Not a number of seconds a clock can reach: refused, not carried into a schedule.
        #expect(parseRetryAfter("inf", now: 0) == nil && parseRetryAfter("nan", now: 0) == nil && parseRetryAfter("-5", now: 0) == nil)
        // The outbox's retry of throttled targets: doubled per attempt, the longer Retry-After
        // wins, and never beyond its limit.
        #expect(OutboxRetry.delay(attempt: 1, base: 60, retryAfter: nil, limit: 86400) == 60)
        #expect(OutboxRetry.delay(attempt: 3, base: 60, retryAfter: 90, limit: 86400) == 240)
        #expect(OutboxRetry.delay(attempt: 1, base: 60, retryAfter: 300, limit: 86400) == 300)
        #expect(OutboxRetry.delay(attempt: 20, base: 86400, retryAfter: 1e20, limit: 2_592_000) == 2_592_000)
        #expect(parseRetryAfter("-5", now: 0) == nil)
        #expect(parseRetryAfter(nil, now: 0) == nil)
    }

    @Test func transportFailuresAreUnreachableAndRetryable() {
        let verdict = DeliveryVerdict.transportFailure(.connectionLost, detail: "GOAWAY")
        #expect(verdict.outcome == .pnsUnreachable)
        #expect(verdict.retry == .afterBackoff(retryAfterSeconds: nil))
        #expect(DeliveryVerdict.transportFailure(.cancelled, detail: "shutdown").outcome == .abandoned)
        #expect(DeliveryVerdict.transportFailure(.cancelled, detail: "shutdown").retry == .never)
    }
}
