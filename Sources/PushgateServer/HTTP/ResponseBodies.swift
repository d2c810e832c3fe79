import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import Pushgate
import PushgateDispatch
import PushgateXML

/// An answer the request context's encoder writes as JSON: the value itself, with no wrapper
/// (any `Encodable`, a string or an array included).
struct JSONAnswer<Value: Encodable & Sendable>: ResponseEncodable, Sendable {
    let value: Value

    init(_ value: Value) { self.value = value }

    func encode(to encoder: any Encoder) throws { try value.encode(to: encoder) }
}

/// An answer already written as JSON text (registrations as their exported JSON lines).
struct JSONText: ResponseGenerator, Sendable {
    let text: String

    init(_ text: String) { self.text = text }

    func response(from request: Request, context: some RequestContext) -> Response { GatewayHTTP.json(200, text) }
}

/// An XML answer (Notification Hubs' documents: `NotificationOutcome`, Atom entries and feeds).
struct XMLAnswer: ResponseGenerator, Sendable {
    let document: [UInt8]
    let contentType: String

    init(_ document: [UInt8], contentType: String = "application/xml; charset=utf-8") {
        self.document = document
        self.contentType = contentType
    }

    func response(from request: Request, context: some RequestContext) -> Response {
        Response(status: .ok, headers: [.contentType: contentType], body: .init(byteBuffer: ByteBuffer(bytes: document)))
    }
}

/// An answer with no body (`Content-Length: 0`, as Notification Hubs sends it), its status and headers.
struct EmptyAnswer: ResponseGenerator, Sendable {
    let status: HTTPResponse.Status
    let headers: HTTPFields

    init(_ status: HTTPResponse.Status, headers: HTTPFields = [:]) {
        self.status = status
        self.headers = headers
    }

    func response(from request: Request, context: some RequestContext) -> Response {
        var headers = headers
        if status != .noContent { headers[.contentLength] = "0" }
        return Response(status: status, headers: headers)
    }
}

/// A send's result in the format the client accepts: JSON written without an encoder
/// (``NotificationResult/jsonBytes()``), or NH's XML.
enum ResultAnswer: ResponseGenerator, Sendable {
    case json(NotificationResult)
    case xml(XMLAnswer)

    func response(from request: Request, context: some RequestContext) -> Response {
        switch self {
        case .json(let result): GatewayHTTP.json(200, ByteBuffer(bytes: result.jsonBytes()))
        case .xml(let answer): answer.response(from: request, context: context)
        }
    }
}

/// `GET /api/me`.
struct MeBody: Codable, Sendable {
    var admin: Bool
    /// For admins: every hub the instance serves at `/{hub}/…`.
    var hubs: [HubSummary]?
    var platforms: [String]
    var sandbox: Bool
    var user: String
}

/// A hub as the console shows it: its path, platforms and shared access rules (names and rights).
struct HubSummary: Codable, Sendable {
    struct Rule: Codable, Sendable {
        var name: String
        var rights: [String]
    }
    var name: String
    var path: String
    var platforms: [String]
    var rules: [Rule]

    static func list(_ directory: HubDirectory) -> [HubSummary] {
        directory.order.compactMap { id in
            guard let hub = directory.hubs[id] else { return nil }
            return HubSummary(
                name: id.rawValue, path: "/\(id.rawValue)/",
                platforms: hub.gateway.app.configuration.services.configuredPlatforms.map(\.rawValue),
                rules: hub.ruleNames.map { Rule(name: $0, rights: (hub.rights(of: $0) ?? []).map(\.rawValue).sorted()) })
        }
    }
}

/// `GET /api/notifications/{id}`: the tutorial client reads `Payload`.
struct SecureMessageBody: Codable, Sendable {
    var id: String
    var payload: String
    var read: Bool

    enum CodingKeys: String, CodingKey {
        case id = "Id", payload = "Payload", read = "Read"
    }
}

/// A notification's telemetry in JSON: `GET /api/notifications/{id}/outcome`, the list, and the
/// answers of an asynchronous send and of a cancel. `pushgate send` and `pushgate notifications`
/// decode the same type.
public struct NotificationRecordBody: Codable, Sendable {
    public var notificationId: String
    public var state: String
    public var sender: String
    public var pns: String
    public var tags: String
    public var enqueueTime: String
    public var deliverAt: String?
    public var startTime: String?
    public var endTime: String?
    public var cancelRequested: Bool
    public var processed: Int
    /// Targets read from the audience so far: its size once `audienceComplete`.
    public var targets: Int
    public var audienceComplete: Bool
    public var success: Int
    public var failure: Int
    public var cancelled: Int
    public var platforms: [PlatformSummary]
    public var location: String
    public var secureId: String?
    public var failedTargets: [TargetResult]?
    /// Pass as `failedAfter` for the next page of failed targets.
    public var nextFailedAfter: String?

    init(_ record: NotificationRecord, failedTargets: [TargetResult]?, nextFailedAfter: String?) {
        notificationId = record.id
        state = record.state.rawValue
        sender = record.sender
        pns = record.selection.description
        tags = record.audience
        enqueueTime = RFC3339.format(record.enqueuedAt)
        deliverAt = record.deliverAt > record.enqueuedAt ? RFC3339.format(record.deliverAt) : nil
        startTime = record.startedAt.map(RFC3339.format)
        endTime = record.endedAt.map(RFC3339.format)
        cancelRequested = record.cancelRequested
        processed = record.processed
        targets = record.targetsClaimed
        audienceComplete = record.audienceExhausted
        success = record.succeeded
        failure = record.failed
        cancelled = record.cancelled
        platforms = record.selection.platforms.map { PlatformSummary(platform: $0, counts: record.counts[$0] ?? [:]) }
        location = GatewayHTTP.outcomePath(record.id)
        secureId = record.secureID
        self.failedTargets = failedTargets
        self.nextFailedAfter = nextFailedAfter
    }
}

/// How far a streamed send has got.
struct DispatchProgressLine: Codable, Sendable {
    var processed: Int
    var succeeded: Int
}

struct ProgressBody: Codable, Sendable {
    var progress: DispatchProgressLine
}

struct StreamedResultBody: Encodable, Sendable {
    var result: NotificationResult
    var status: Int
    var secureId: String?
}
