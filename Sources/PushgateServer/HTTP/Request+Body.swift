import Hummingbird
import NIOCore
import PushgateGateway

extension Request {
    /// The whole body, at most `limit` bytes: over it is ``GatewayError/Kind/tooLarge`` (the rest
    /// is not read), a body that cannot be read ``GatewayError/Kind/invalid``. Both APIs read bodies here.
    func collectedBytes(limit: Int) async throws(GatewayError) -> [UInt8] {
        var request = self
        do {
            let buffer = try await request.collectBody(upTo: limit)
            return Array(buffer.readableBytesView)
        } catch let error as HTTPError where error.status == .contentTooLarge {
            throw GatewayError(.tooLarge, "request body is larger than \(limit) bytes")
        } catch is NIOTooManyBytesError {
            throw GatewayError(.tooLarge, "request body is larger than \(limit) bytes")
        } catch {
            throw GatewayError(.invalid, "the request body could not be read: \(error)")
        }
    }
}
