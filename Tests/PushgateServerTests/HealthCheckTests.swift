import Foundation
import Hummingbird
import HummingbirdTesting
import Pushgate
import PushgateServer
import PushgateTesting
import Testing

/// `/healthz` answers from the database's health monitor: however often it is called, the
/// database is probed at most once per interval (and at once after a store call failed for want
/// of it); the answer follows the last probe, 503 while it failed.
@Suite struct HealthCheckTests {
    let start = Timestamp(secondsSinceEpoch: 1_800_000_000)

    /// `GET /healthz` as the gateway routes it, in process, answering from `health`.
    func healthz(
        _ health: HealthMonitor, _ body: @Sendable (@escaping @Sendable () async throws -> (Int, String, String?)) async throws -> Void
    )
        async throws
    {
        let router = Router(context: GatewayContext.self)
        GatewayHTTP.addHealth(to: router, health: health)
        try await Application(router: router).test(.router) { client in
            try await body {
                let response = try await client.execute(uri: "/healthz", method: .get)
                return (response.status.code, String(buffer: response.body), response.headers[.retryAfter])
            }
        }
    }

    @Test func healthChecksWithinAnIntervalCostOneProbe() async throws {
        let clock = ManualClock(now: start)
        let probe = ScriptedHealthProbe()
        try await healthz(HealthMonitor(clock: clock, probe: probe.probe)) { call in
            for _ in 0..<200 {
                let status = try await call().0
                #expect(status == 200)
            }
            #expect(probe.calls == 1)
            clock.advance(by: .milliseconds(4_800))
            for _ in 0..<200 {
                let status = try await call().0
                #expect(status == 200)
            }
            #expect(probe.calls == 1)
            clock.advance(by: .milliseconds(400))
            for _ in 0..<200 {
                let status = try await call().0
                #expect(status == 200)
            }
            #expect(probe.calls == 2)
        }
    }

    @Test func theAnswerIs503AfterAFailedProbeAnd200AfterAGoodOne() async throws {
        let clock = ManualClock(now: start)
        let probe = ScriptedHealthProbe()
        try await healthz(HealthMonitor(clock: clock, probe: probe.probe)) { call in
            let first = try await call().0
            #expect(first == 200)
            probe.answer("cannot connect", nil)
            clock.advance(by: .seconds(6))
            let down = try await call()
            #expect(down.0 == 503 && down.1 == "database unavailable: cannot connect\n" && down.2 == "1", "\(down)")
            // The failure stands for the retry interval (1 s), then the next probe finds it back.
            for _ in 0..<50 {
                let status = try await call().0
                #expect(status == 503)
            }
            #expect(probe.calls == 2)
            clock.advance(by: .milliseconds(1_200))
            let up = try await call()
            #expect(up.0 == 200 && up.1 == "ok\n", "\(up)")
            #expect(probe.calls == 3)
        }
    }

    @Test func aFailedStoreCallIsProbedAtOnce() async throws {
        let probe = ScriptedHealthProbe()
        let health = HealthMonitor(clock: ManualClock(now: start), probe: probe.probe)
        try await healthz(health) { call in
            let first = try await call().0
            #expect(first == 200)
            probe.answer("the server closed the connection")
            // The clock has not moved: only the reported failure makes the healthy finding stale.
            health.reportFailure()
            let after = try await call().0
            #expect(after == 503)
            #expect(probe.calls == 2)
        }
    }

    @Test func concurrentHealthChecksWaitForTheOneProbeRunning() async throws {
        let probe = ScriptedHealthProbe(["refused"], held: true)
        try await healthz(HealthMonitor(clock: ManualClock(now: start), probe: probe.probe)) { call in
            let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
                for _ in 0..<50 { group.addTask { try await call().0 } }
                probe.release()
                return try await group.reduce(into: [Int]()) { $0.append($1) }
            }
            #expect(statuses == Array(repeating: 503, count: 50))
            #expect(probe.calls == 1)
        }
    }

    /// What the store asks before each call: never a probe while the database answers; found
    /// down, refused at once until the finding is due, then probed before answering (so that the
    /// first call after the database came back is not refused).
    @Test func storeCallsNeverWaitForAProbeWhileTheDatabaseAnswers() async {
        let clock = ManualClock(now: start)
        let probe = ScriptedHealthProbe()
        let health = HealthMonitor(clock: clock, probe: probe.probe)
        #expect(await health.unavailability() == nil)
        #expect(probe.calls == 0)
        #expect(await health.status() == nil)
        clock.advance(by: .seconds(60))
        #expect(await health.unavailability() == nil)
        #expect(probe.calls == 1)
        probe.answer("cannot connect", nil)
        health.reportFailure()
        #expect(await health.status() == "cannot connect")
        #expect(await health.unavailability() == "cannot connect")
        #expect(probe.calls == 2)
        clock.advance(by: .milliseconds(1_500))
        #expect(await health.unavailability() == nil)
        #expect(probe.calls == 3)
    }

    @Test func aFailureReportedDuringAProbeThatFindsTheDatabaseAnsweringIsProbedAgain() {
        var machine = HealthMonitor.StateMachine(configuration: .init())
        #expect(machine.status(now: start) == .probe)
        // Reported while the probe runs, which may have started before the failure.
        let duringProbe = machine.failureReported()
        #expect(!duringProbe)
        #expect(machine.status(now: start) == .join)
        let again = machine.probeFinished(.healthy, now: start)
        #expect(again)
        #expect(machine.status(now: start) == .join)
        let thenDone = machine.probeFinished(.healthy, now: start)
        #expect(!thenDone)
        #expect(machine.status(now: start) == .answer(.healthy))
        // A probe that finds the database down needs no second one.
        let probesAtOnce = machine.failureReported()
        let joins = machine.failureReported()
        #expect(probesAtOnce && !joins)
        let afterDown = machine.probeFinished(.unavailable("refused"), now: start)
        #expect(!afterDown)
        #expect(machine.status(now: start) == .answer(.unavailable("refused")))
        #expect(machine.unavailability(now: start) == .answer(.unavailable("refused")))
        #expect(machine.unavailability(now: start.advanced(by: .seconds(1))) == .probe)
    }
}
