import NIOCore
import PushgateServer
import Testing

/// The HTTP/2 frame budget, decision by decision, with the time given: a flood of frames that
/// carry no request ends in GOAWAY(ENHANCE_YOUR_CALM); requests earn their flow control.
@Suite struct HTTP2FrameBudgetTests {
    static let preface = Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8)

    static func frame(type: UInt8, stream: UInt32 = 0, payload: [UInt8] = []) -> [UInt8] {
        let length = payload.count
        return [UInt8(length >> 16), UInt8(length >> 8 & 0xFF), UInt8(length & 0xFF), type, 0]
            + [UInt8(stream >> 24), UInt8(stream >> 16 & 0xFF), UInt8(stream >> 8 & 0xFF), UInt8(stream & 0xFF)] + payload
    }
    static let windowUpdate = frame(type: 0x8, payload: [0, 0, 0, 1])
    static func headers(_ stream: UInt32) -> [UInt8] { frame(type: 0x1, stream: stream, payload: Array(repeating: 0x82, count: 20)) }

    private func read(_ meter: inout HTTP2FrameMeter, _ bytes: [UInt8], at seconds: Double) -> HTTP2FrameMeter.Verdict {
        meter.read(ByteBuffer(bytes: bytes).readableBytesView, now: .uptimeNanoseconds(UInt64(seconds * 1e9) + 1_000_000_000))
    }

    @Test func aWindowUpdateFloodIsAnsweredWithGoAwayNamingTheLastRequest() {
        let configuration = HTTP2FrameMeter.Configuration(burst: 100, perSecond: 10, perRequest: 5)
        var meter = HTTP2FrameMeter(configuration: configuration, now: .uptimeNanoseconds(1_000_000_000))
        #expect(read(&meter, Self.preface + Self.frame(type: 0x4) + Self.headers(1) + Self.headers(3), at: 0) == .proceed)
        // The requests refill what SETTINGS took, up to the burst: 100 more control frames pass, the 101st does not.
        #expect(read(&meter, Array(Array(repeating: Self.windowUpdate, count: 100).joined()), at: 0) == .proceed)
        #expect(read(&meter, Self.windowUpdate, at: 0) == .goAway(lastStreamID: 3))
        #expect(read(&meter, Self.headers(5), at: 100) == .goAway(lastStreamID: 3), "once over, always over")
        #expect(HTTP2FrameMeter.goAwayFrame(lastStreamID: 3) == [0, 0, 8, 7, 0, 0, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0, 0xB])
    }

    @Test func timeAndRequestsRefillTheBudgetAndBodiesCostNothing() {
        let configuration = HTTP2FrameMeter.Configuration(burst: 10, perSecond: 10, perRequest: 2)
        var meter = HTTP2FrameMeter(configuration: configuration, now: .uptimeNanoseconds(1_000_000_000))
        let ten = Array(Array(repeating: Self.windowUpdate, count: 10).joined())
        #expect(read(&meter, Self.preface + ten, at: 0) == .proceed)
        // A second later the bucket is full again; DATA with a body and CONTINUATION cost nothing.
        let body = Self.frame(type: 0x0, stream: 1, payload: Array(repeating: 7, count: 3000))
        #expect(read(&meter, Array(Array(repeating: body, count: 50).joined()) + ten, at: 1) == .proceed)
        // Each request earns two control frames: a busy client's WINDOW_UPDATEs keep within it.
        for second in 2...20 {
            let traffic = (0..<100).flatMap { Self.headers(UInt32(2 * $0 + 1)) + Self.windowUpdate + Self.windowUpdate }
            #expect(read(&meter, traffic, at: Double(second) / 1000 + 1) == .proceed)
        }
        // Frames split across reads at any byte are still counted whole.
        var split = HTTP2FrameMeter(configuration: configuration, now: .uptimeNanoseconds(1_000_000_000))
        let flood = Self.preface + Array(Array(repeating: Self.windowUpdate, count: 11).joined())
        var verdicts: [HTTP2FrameMeter.Verdict] = []
        for byte in flood { verdicts.append(read(&split, [byte], at: 0)) }
        // The 11th frame overdraws the bucket at the last byte of its header.
        let overdrawnAt = Self.preface.count + 10 * Self.windowUpdate.count + 8
        #expect(verdicts[..<overdrawnAt].allSatisfy { $0 == .proceed })
        #expect(verdicts[overdrawnAt...].allSatisfy { $0 == .goAway(lastStreamID: 0) })
    }
}
