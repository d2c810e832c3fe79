/// Where a secret (a key, a password, a client secret) comes from. Secrets are never logged: the
/// description names the source, never the value.
///
/// In `config.json`: `{"file": "secrets/AuthKey.p8"}`, `{"env": "PUSHGATE_WNS_SECRET"}` or, for
/// throwaway setups only, `{"value": "..."}`.
public enum SecretSource: Sendable, Hashable, CustomStringConvertible {
    /// A file's contents (relative paths are relative to the configuration file).
    case file(String)
    /// An environment variable's value.
    case environment(String)
    /// A value written into the configuration itself.
    case inline(String)

    public var description: String {
        switch self {
        case .file(let path): "file \(path)"
        case .environment(let name): "environment variable \(name)"
        case .inline: "inline value (redacted)"
        }
    }
}
