/// A PostgreSQL store: where the server is (`postgres://user@host:port/database`, or a Unix
/// socket folder with `?host=/run/postgresql`), the password as a secret, and the pool.
///
/// The password never goes in the URL (URLs end up in logs and process lists): it is a secret,
/// `{"env": "PGPASSWORD"}` or `{"file": "secrets/pg-password"}`.
public struct PostgresSettings: Sendable, Hashable {
    public var url: PostgresURL
    public var password: SecretSource?
    /// Connections per gateway instance.
    public var poolSize: Int
    /// How long a store call waits for the database before it fails as unavailable (503).
    public var timeoutSeconds: Int
    /// The outbox's statements as named prepared statements, parsed once per connection and planned
    /// for their values at every execution (`plan_cache_mode = force_custom_plan`: the generic plan
    /// made while the tables were empty scanned them whole). Off by default: so planned, they are
    /// level with unnamed statements (302 against 306 sends/s in 15-second runs of the everyday
    /// send; docs/performance.md). Never behind a PgBouncer in transaction mode older than 1.21,
    /// which does not keep a connection's prepared statements.
    public var preparedStatements: Bool

    public init(
        url: PostgresURL, password: SecretSource? = nil, poolSize: Int = 8, timeoutSeconds: Int = 5, preparedStatements: Bool = false
    ) {
        self.url = url
        self.password = password
        self.poolSize = poolSize
        self.timeoutSeconds = timeoutSeconds
        self.preparedStatements = preparedStatements
    }
}

/// A parsed `postgres://` or `postgresql://` URL: `postgres://USER@HOST[:PORT]/DATABASE[?OPTIONS]`.
/// Options: `host=/socket/folder` (a Unix socket instead of TCP), `sslmode=disable|prefer|require`.
public struct PostgresURL: Sendable, Hashable, CustomStringConvertible {
    /// libpq's `sslmode`s: `prefer` and `require` encrypt without checking the certificate,
    /// `verify-full` checks it and the host name.
    public enum TLSMode: String, Sendable, Hashable {
        case disable, prefer, require
        case verifyFull = "verify-full"
    }

    public var user: String
    /// A host name or address; nil with a socket folder.
    public var host: String?
    public var port: Int
    /// The folder of the server's Unix socket (`.s.PGSQL.PORT` in it).
    public var socketFolder: String?
    public var database: String
    public var tls: TLSMode

    /// The socket file when connecting through one.
    public var socketPath: String? { socketFolder.map { "\($0)/.s.PGSQL.\(port)" } }

    public var description: String {
        let place = socketFolder.map { "socket \($0)" } ?? "\(host ?? "localhost"):\(port)"
        return "postgres://\(user)@\(place)/\(database)"
    }

    public init(parsing text: String) throws(PostgresURLError) {
        var rest = Substring(text)
        guard let schemeEnd = rest.firstRange(of: "://") else { throw PostgresURLError("expected postgres://USER@HOST:PORT/DATABASE") }
        let scheme = rest[..<schemeEnd.lowerBound]
        guard scheme == "postgres" || scheme == "postgresql" else {
            throw PostgresURLError("the scheme is '\(scheme)'; expected postgres:// or postgresql://")
        }
        rest = rest[schemeEnd.upperBound...]
        // A password (user:secret@) is refused before anything else is parsed, so that no error
        // repeats any of it, whatever characters it holds.
        if let at = rest.lastIndex(of: "@"), rest[..<at].contains(":") {
            throw PostgresURLError("the URL holds a password; give it as store.postgres.password ({\"env\": …} or {\"file\": …}) instead")
        }
        var query: Substring = ""
        if let mark = rest.firstIndex(of: "?") {
            query = rest[rest.index(after: mark)...]
            rest = rest[..<mark]
        }
        var authority = rest
        var path: Substring = ""
        if let slash = rest.firstIndex(of: "/") {
            authority = rest[..<slash]
            path = rest[rest.index(after: slash)...]
        }
        var user = "postgres"
        if let at = authority.lastIndex(of: "@") {
            let userInfo = authority[..<at]
            if userInfo.contains(":") {
                throw PostgresURLError(
                    "the URL holds a password; give it as store.postgres.password ({\"env\": …} or {\"file\": …}) instead")
            }
            user = Self.decode(userInfo)
            authority = authority[authority.index(after: at)...]
        }
        var host: String? = nil
        var port = 5432
        if !authority.isEmpty {
            if let colon = authority.lastIndex(of: ":") {
                guard let number = Int(authority[authority.index(after: colon)...]), (1...65535).contains(number) else {
                    throw PostgresURLError("the port '\(authority[authority.index(after: colon)...])' is not a number from 1 to 65535")
                }
                port = number
                host = String(authority[..<colon])
            } else {
                host = String(authority)
            }
        }
        var socketFolder: String? = nil
        var tls = TLSMode.prefer
        for pair in query.split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let key = parts[0]
            let value = parts.count > 1 ? Self.decode(parts[1]) : ""
            switch key {
            case "host":
                guard value.hasPrefix("/") else { throw PostgresURLError("host= takes a socket folder (an absolute path), not '\(value)'") }
                socketFolder = value
            case "port":
                guard let number = Int(value), (1...65535).contains(number) else {
                    throw PostgresURLError("the port '\(value)' is not a number from 1 to 65535")
                }
                port = number
            case "user":
                user = value
            case "sslmode":
                guard let mode = TLSMode(rawValue: value) else {
                    throw PostgresURLError("sslmode '\(value)' is not one of disable, prefer, require, verify-full")
                }
                tls = mode
            case "password":
                throw PostgresURLError(
                    "the URL holds a password; give it as store.postgres.password ({\"env\": …} or {\"file\": …}) instead")
            default:
                throw PostgresURLError("unknown URL option '\(key)'; expected host, port, user or sslmode")
            }
        }
        if host == nil && socketFolder == nil { host = "localhost" }
        let database = Self.decode(path)
        guard !database.isEmpty else { throw PostgresURLError("the URL names no database (postgres://USER@HOST:PORT/DATABASE)") }
        guard !user.isEmpty else { throw PostgresURLError("the URL names no user") }
        self.user = user
        self.host = socketFolder == nil ? host : nil
        self.port = port
        self.socketFolder = socketFolder
        self.database = database
        self.tls = socketFolder == nil ? tls : .disable
    }

    /// Percent-decoding (`%2F` → `/`).
    static func decode(_ text: Substring) -> String {
        var bytes: [UInt8] = []
        var utf8 = Array(text.utf8)[...]
        while let byte = utf8.popFirst() {
            if byte == UInt8(ascii: "%"), utf8.count >= 2, let value = UInt8(String(decoding: utf8.prefix(2), as: UTF8.self), radix: 16) {
                bytes.append(value)
                utf8 = utf8.dropFirst(2)
            } else {
                bytes.append(byte)
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}

/// A PostgreSQL URL that cannot be used, and why.
public struct PostgresURLError: Error, Hashable, Sendable, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}
