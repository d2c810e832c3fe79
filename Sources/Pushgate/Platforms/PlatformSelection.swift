/// The set of platforms a send targets, parsed from the `pns` parameter.
///
/// Accepts one platform (`apns`, `fcm`, `gcm`, `wns`), `all`, or a comma-separated list
/// (`apns,wns`); case and surrounding spaces are ignored; duplicates collapse.
///
/// ```swift
/// let selection = try PlatformSelection(parsing: "apns, WNS")
/// selection.platforms  // [.apns, .wns]
/// ```
public struct PlatformSelection: Sendable, Hashable, CustomStringConvertible {
    /// The selected platforms in canonical order (``Platform/allCases``).
    public let platforms: [Platform]

    public static let all = PlatformSelection(uncheckedPlatforms: Platform.allCases)

    public init(_ platforms: some Sequence<Platform>) {
        self.platforms = Array(Set(platforms)).sorted()
    }

    private init(uncheckedPlatforms: [Platform]) {
        self.platforms = uncheckedPlatforms
    }

    public init(parsing text: String) throws(PlatformSelectionError) {
        let items = text.split(separator: ",", omittingEmptySubsequences: false)
            .map { $0.trimmed(of: " \t") }
        if items.allSatisfy(\.isEmpty) { throw PlatformSelectionError(.empty) }
        var chosen: Set<Platform> = []
        for item in items {
            let lowered = item.lowercased()
            if lowered == "all" {
                chosen.formUnion(Platform.allCases)
            } else if let platform = Platform(rawValue: lowered) {
                chosen.insert(platform)
            } else if item.isEmpty {
                throw PlatformSelectionError(.emptyItem(text))
            } else {
                throw PlatformSelectionError(.unknown(item))
            }
        }
        self.init(chosen)
    }

    public func contains(_ platform: Platform) -> Bool { platforms.contains(platform) }

    public var description: String {
        platforms == Platform.allCases ? "all" : platforms.map(\.rawValue).joined(separator: ",")
    }
}

/// The `pns` value names no known platform.
public struct PlatformSelectionError: PushgateInputError, Hashable {
    fileprivate enum Code: Hashable {
        case empty
        case emptyItem(String)
        case unknown(String)
    }

    private let code: Code

    fileprivate init(_ code: Code) { self.code = code }

    public var description: String {
        let accepted = "accepted: \(Platform.names), all, or a comma-separated list"
        switch code {
        case .empty: return "pns is empty; \(accepted)"
        case .emptyItem(let text): return "pns '\(text)' has an empty item; \(accepted)"
        case .unknown(let value): return "pns '\(value)' is not a known platform; \(accepted)"
        }
    }
}
