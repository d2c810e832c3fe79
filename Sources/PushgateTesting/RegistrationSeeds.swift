import Foundation
import PNSSandbox
import Pushgate

/// Registrations written straight into a store (as an import would), for tests that need an
/// audience: ids in order, every one carrying `username:<user>`.
public enum RegistrationSeeds {
    /// `count` APNs registrations with made-up tokens (the sandbox answers them as unknown
    /// devices), ids `<prefix>0000000`, `<prefix>0000001`, ….
    public static func apns(count: Int, user: String, idPrefix: String = "s") throws -> [Registration] {
        try (0..<count).map { index in
            try Registration(
                id: try RegistrationID(idPrefix + String(format: "%07d", index)),
                handle: DeviceHandle(uncheckedPlatform: .apns, value: String(format: "%064x", index + 1)),
                tags: [try Tag.username(user)], owner: user)
        }
    }

    /// One registration per new sandbox device of `platform` (real devices: their inboxes fill).
    public static func sandboxDevices(
        _ count: Int, _ platform: Platform, in sandbox: PushSandbox, user: String
    ) async throws
        -> [Registration]
    {
        var registrations: [Registration] = []
        for _ in 0..<count {
            let device = await sandbox.createDevice(platform)
            registrations.append(
                try Registration(
                    id: .random(), handle: DeviceHandle(uncheckedPlatform: platform, value: device.handle), tags: [try .username(user)],
                    owner: user))
        }
        return registrations
    }

    /// The current time, for `restore(_:now:)`.
    public static var now: Timestamp { Timestamp(secondsSinceEpoch: Date().timeIntervalSince1970) }
}
