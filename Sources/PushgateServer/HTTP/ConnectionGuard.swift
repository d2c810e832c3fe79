import Foundation
import HTTPTypes
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTPTypes

/// Limits of the HTTP listener against slow and numerous clients (slowloris).
public struct ConnectionLimits: Sendable, Hashable {
    /// A request head must be complete this long after the connection opened or the previous
    /// response ended.
    public var headerTimeout: TimeAmount
    /// A request body may pause this long between two reads.
    public var bodyTimeout: TimeAmount
    /// A whole request body must arrive within this long of its head (a body dripping one byte
    /// just inside ``bodyTimeout`` would otherwise never end).
    public var bodyDeadline: TimeAmount
    /// A keep-alive connection with no request for this long is closed.
    public var idleTimeout: TimeAmount
    /// Open connections at most.
    public var maximumConnections: Int

    public init(
        headerTimeout: TimeAmount, bodyTimeout: TimeAmount, bodyDeadline: TimeAmount, idleTimeout: TimeAmount, maximumConnections: Int
    ) {
        self.headerTimeout = headerTimeout
        self.bodyTimeout = bodyTimeout
        self.bodyDeadline = bodyDeadline
        self.idleTimeout = idleTimeout
        self.maximumConnections = maximumConnections
    }
}

/// The open connections of one listener, shared by every connection's ``ConnectionGuard``.
///
/// When full, a new connection displaces the oldest one still waiting for its first request head
/// (the signature of a slowloris client), so a flood of slow clients cannot keep real ones —
/// or `/healthz` — out; when every connection is busy with a request, the new one is closed.
public final class ConnectionRegistry: Sendable {
    struct Entry {
        var channel: any Channel
        var sequence: Int
        var waitingForFirstHead: Bool
    }

    struct State {
        var entries: [ObjectIdentifier: Entry] = [:]
        /// Admissions in order, the candidates for displacement: an element whose connection has
        /// since received a head or closed is skipped when it reaches the front, and dropped when
        /// the queue outgrows the entries (so finding the oldest waiting connection is amortised
        /// O(1), not a scan of every connection at each accept of a full listener).
        var arrivals = CircularBuffer<(sequence: Int, id: ObjectIdentifier)>()
        var sequence = 0
        var displaced = 0
        var refused = 0
        var timedOut = 0

        func isWaiting(_ arrival: (sequence: Int, id: ObjectIdentifier)) -> Bool {
            guard let entry = entries[arrival.id] else { return false }
            // The identifier of a closed channel may be reused by a new one: the sequence tells.
            return entry.sequence == arrival.sequence && entry.waitingForFirstHead
        }

        /// The oldest connection still waiting for its first request head.
        mutating func oldestWaiting() -> ObjectIdentifier? {
            while let first = arrivals.first {
                if isWaiting(first) { return first.id }
                arrivals.removeFirst()
            }
            return nil
        }

        mutating func add(_ channel: any Channel) {
            sequence += 1
            let id = ObjectIdentifier(channel)
            entries[id] = Entry(channel: channel, sequence: sequence, waitingForFirstHead: true)
            arrivals.append((sequence, id))
            if arrivals.count > 2 * entries.count + 64 {
                arrivals = CircularBuffer(arrivals.filter(isWaiting))
            }
        }
    }

    public let limits: ConnectionLimits
    private let state = NIOLockedValueBox(State())

    public init(limits: ConnectionLimits) { self.limits = limits }

    /// Connections open now.
    public var count: Int { state.withLockedValue { $0.entries.count } }
    /// Admissions held in the displacement queue (bounded by the compaction).
    package var queuedArrivals: Int { state.withLockedValue { $0.arrivals.count } }
    /// Connections closed to make room, refused, or closed by a timeout, since start.
    public var closedCounts: (displaced: Int, refused: Int, timedOut: Int) {
        state.withLockedValue { ($0.displaced, $0.refused, $0.timedOut) }
    }

    /// Registers `channel`; false when it must be closed because the listener is full of busy
    /// connections. May close another, slow, connection to make room.
    package func admit(_ channel: any Channel) -> Bool {
        enum Admission {
            case admitted(displacing: (any Channel)?)
            case refused
        }
        let admission = state.withLockedValue { state -> Admission in
            var victim: (any Channel)?
            if state.entries.count >= limits.maximumConnections {
                guard let oldest = state.oldestWaiting() else {
                    state.refused += 1
                    return .refused
                }
                victim = state.entries.removeValue(forKey: oldest)?.channel
                state.displaced += 1
            }
            state.add(channel)
            return .admitted(displacing: victim)
        }
        switch admission {
        case .refused:
            return false
        case .admitted(let victim):
            victim?.close(promise: nil)
            return true
        }
    }

    package func headReceived(_ channel: any Channel) {
        state.withLockedValue { $0.entries[ObjectIdentifier(channel)]?.waitingForFirstHead = false }
    }

    func timedOut() { state.withLockedValue { $0.timedOut += 1 } }

    package func remove(_ channel: any Channel) {
        state.withLockedValue { _ = $0.entries.removeValue(forKey: ObjectIdentifier(channel)) }
    }
}

/// Per connection, after HTTP decoding: closes a connection whose request head does not arrive
/// in time or whose body stalls, and takes part in the listener's connection cap.
///
/// Runs on its channel's event loop only (NIO's handler contract), hence `@unchecked Sendable`
/// for the timer closures, which are scheduled on that same loop.
final class ConnectionGuard: ChannelDuplexHandler, RemovableChannelHandler, @unchecked Sendable {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    private enum Phase {
        /// Waiting for a request head: the first (header timeout) or the next (idle timeout).
        case awaitingHead
        case readingBody
        /// The request is complete; its response is being produced.
        case responding
    }

    private let registry: ConnectionRegistry
    private var phase = Phase.awaitingHead
    /// When the phase's time is up: the next head's, or the next body part's (nil while responding).
    private var deadline: NIODeadline?
    /// When the whole body must have arrived (while reading one).
    private var bodyDeadline: NIODeadline?
    /// When the connection closes unless something arrives: the sooner of the two.
    private var due: NIODeadline? { deadline.map { deadline in bodyDeadline.map { min($0, deadline) } ?? deadline } }
    /// One timer per connection, never earlier than needed, and moved only when a deadline comes
    /// sooner than it fires: a later deadline is checked when it fires. A request on a kept-alive
    /// connection schedules nothing (its body's deadline is after the pending timer, set for the
    /// previous request), where a timer per phase cost three schedules and four cancels.
    private var timer: (task: Scheduled<Void>, fires: NIODeadline)?
    private var admitted = false
    private var sawHead = false
    private var closeAfterResponse = false

    init(registry: ConnectionRegistry) { self.registry = registry }

    func handlerAdded(context: ChannelHandlerContext) {
        guard context.channel.isActive else { return }
        start(context)
    }

    func channelActive(context: ChannelHandlerContext) {
        start(context)
        context.fireChannelActive()
    }

    private func start(_ context: ChannelHandlerContext) {
        guard !admitted else { return }
        admitted = true
        guard registry.admit(context.channel) else {
            context.close(promise: nil)
            return
        }
        expect(context, within: registry.limits.headerTimeout)
    }

    func channelInactive(context: ChannelHandlerContext) {
        stopTimer()
        registry.remove(context.channel)
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        stopTimer()
        registry.remove(context.channel)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head:
            if !sawHead {
                sawHead = true
                registry.headReceived(context.channel)
            }
            phase = .readingBody
            bodyDeadline = .now() + registry.limits.bodyDeadline
            expect(context, within: registry.limits.bodyTimeout)
        case .body:
            if phase == .readingBody { expect(context, within: registry.limits.bodyTimeout) }
        case .end:
            phase = .responding
            deadline = nil
            bodyDeadline = nil
        }
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        switch unwrapOutboundIn(data) {
        case .head(var head) where phase == .readingBody:
            // Answered before the request body ended (413, 401, …): the rest of the body is not
            // read — Hummingbird would drain it, however large — the connection closes instead.
            closeAfterResponse = true
            head.headerFields[.connection] = "close"
            context.write(wrapOutboundOut(.head(head)), promise: promise)
        case .end where closeAfterResponse:
            let written = promise ?? context.eventLoop.makePromise()
            context.writeAndFlush(data, promise: written)
            let channel = context.channel
            written.futureResult.whenComplete { _ in channel.close(promise: nil) }
        case .end where phase == .responding:
            phase = .awaitingHead
            expect(context, within: registry.limits.idleTimeout)
            context.write(data, promise: promise)
        default:
            context.write(data, promise: promise)
        }
    }

    /// The phase's time is up `delay` from now; the timer moves only if it would fire later.
    private func expect(_ context: ChannelHandlerContext, within delay: TimeAmount) {
        deadline = .now() + delay
        guard let due else { return }
        if let timer, timer.fires <= due { return }
        schedule(context.channel, at: due)
    }

    private func schedule(_ channel: any Channel, at due: NIODeadline) {
        timer?.task.cancel()
        let task = channel.eventLoop.scheduleTask(deadline: due) { [self] in timerFired(channel) }
        timer = (task, due)
    }

    private func timerFired(_ channel: any Channel) {
        timer = nil
        guard let due else { return }  // responding: the next phase sets its own
        if due <= .now() {
            registry.timedOut()
            channel.close(promise: nil)
        } else {
            schedule(channel, at: due)
        }
    }

    /// No deadline is left: a cancelled timer that still runs (one NIO had already taken for the
    /// loop's current tick) finds none, and neither counts a timeout nor schedules another.
    private func stopTimer() {
        timer?.task.cancel()
        timer = nil
        deadline = nil
        bodyDeadline = nil
    }
}
