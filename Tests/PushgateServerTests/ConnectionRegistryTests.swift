import NIOCore
import NIOEmbedded
import PushgateServer
import Testing

/// The listener's connection cap, admission by admission: a full listener displaces the oldest
/// connection still waiting for its first request head, refuses when every connection is busy,
/// and its bookkeeping stays bounded however many connections come and go.
@Suite struct ConnectionRegistryTests {
    static func registry(maximum: Int) -> ConnectionRegistry {
        ConnectionRegistry(
            limits: ConnectionLimits(
                headerTimeout: .seconds(10), bodyTimeout: .seconds(10), bodyDeadline: .seconds(60), idleTimeout: .seconds(60),
                maximumConnections: maximum))
    }

    static func connected() throws -> EmbeddedChannel {
        let channel = EmbeddedChannel()
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 80)).wait()
        return channel
    }

    @Test func aFullListenerDisplacesTheOldestWaitingConnectionAndRefusesWhenAllAreBusy() throws {
        let registry = Self.registry(maximum: 3)
        let (a, b, c, d, e, f) = try (
            Self.connected(), Self.connected(), Self.connected(), Self.connected(), Self.connected(), Self.connected()
        )
        #expect(registry.admit(a) && registry.admit(b) && registry.admit(c))
        registry.headReceived(a)
        // b is the oldest still waiting (a has sent a head): d takes its place.
        #expect(registry.admit(d))
        #expect(a.isActive && !b.isActive && c.isActive && d.isActive)
        #expect(registry.admit(e))
        #expect(!c.isActive && d.isActive && e.isActive)
        registry.headReceived(d)
        registry.headReceived(e)
        // Every connection is busy: the new one is refused, none is closed.
        #expect(!registry.admit(f))
        #expect(a.isActive && d.isActive && e.isActive)
        registry.remove(a)
        #expect(registry.admit(f))
        #expect(registry.count == 3)
        #expect(registry.closedCounts.displaced == 2 && registry.closedCounts.refused == 1)
    }

    @Test func aFloodOnAFullListenerKeepsTheDisplacementQueueBounded() throws {
        let registry = Self.registry(maximum: 8)
        var open: [EmbeddedChannel] = []
        // 8 slow clients fill it; 5,000 more each displace the oldest waiting one.
        for _ in 0..<5_008 {
            let channel = try Self.connected()
            #expect(registry.admit(channel))
            open.append(channel)
        }
        #expect(registry.count == 8 && registry.closedCounts.displaced == 5_000)
        #expect(open.suffix(8).allSatisfy(\.isActive) && open.dropLast(8).allSatisfy { !$0.isActive })
        #expect(registry.queuedArrivals <= 2 * registry.count + 65, "\(registry.queuedArrivals) held")
    }

    @Test func churnKeepsTheDisplacementQueueBoundedAndInOrder() throws {
        let registry = Self.registry(maximum: 4)
        // A busy connection that stays, and thousands that come, send a head, and go.
        let busy = try Self.connected()
        #expect(registry.admit(busy))
        registry.headReceived(busy)
        for _ in 0..<5_000 {
            let channel = try Self.connected()
            #expect(registry.admit(channel))
            registry.headReceived(channel)
            registry.remove(channel)
        }
        #expect(registry.count == 1)
        // Compacted when over 2 × the connections + 64 at an admission (then 2 connections).
        #expect(registry.queuedArrivals <= 2 * (registry.count + 1) + 64, "\(registry.queuedArrivals) queued")
        // The queue still finds the oldest waiting connection after all that churn.
        let (first, second, third, fourth) = try (Self.connected(), Self.connected(), Self.connected(), Self.connected())
        #expect(registry.admit(first) && registry.admit(second) && registry.admit(third))
        #expect(registry.admit(fourth))
        #expect(!first.isActive && second.isActive && third.isActive && fourth.isActive && busy.isActive)
    }
}
