import NIOCore
import PostgresNIO
import Pushgate

/// The connection settings a store's pool and its health probe are made with, from the
/// configuration's `store.postgres` settings.
extension PostgresStore {
    static func configuration(_ settings: PostgresSettings, password: String?) -> PostgresClient.Configuration {
        let url = settings.url
        var configuration: PostgresClient.Configuration
        if let socket = url.socketPath {
            configuration = .init(unixSocketPath: socket, username: url.user, password: password, database: url.database)
        } else {
            let tls: PostgresClient.Configuration.TLS =
                switch url.tls {
                case .disable: .disable
                case .prefer: .prefer(Self.tlsConfiguration(verify: false))
                case .require: .require(Self.tlsConfiguration(verify: false))
                case .verifyFull: .require(Self.tlsConfiguration(verify: true))
                }
            configuration = .init(
                host: url.host ?? "localhost", port: url.port, username: url.user, password: password, database: url.database, tls: tls)
        }
        configuration.options.maximumConnections = settings.poolSize
        configuration.options.minimumConnections = 1
        configuration.options.connectTimeout = .seconds(settings.timeoutSeconds)
        // A query that waits on a lock or runs away fails instead of holding its connection.
        configuration.options.additionalStartupParameters = [
            ("application_name", "pushgate"), ("lock_timeout", "\(settings.timeoutSeconds * 1000)"),
            ("statement_timeout", "\(max(60, settings.timeoutSeconds * 12) * 1000)"), ("TimeZone", "UTC"),
        ]
        // A prepared statement is planned for its values every time. After five executions the
        // server otherwise keeps a generic plan made from the statistics of that moment: made while
        // the outbox's tables were empty, it scanned them whole, and an everyday send's key lookups
        // took 0.6–1.35 ms instead of 0.01–0.07 once the tables held some thousands of rows
        // (docs/performance.md). What a prepared statement then saves is its parsing.
        if settings.preparedStatements {
            configuration.options.additionalStartupParameters.append(("plan_cache_mode", "force_custom_plan"))
        }
        return configuration
    }

    /// libpq's modes: `prefer` and `require` encrypt without checking the certificate (a server's
    /// self-signed one is accepted); `verify-full` checks it and the host name.
    static func tlsConfiguration(verify: Bool) -> TLSConfiguration {
        var configuration = TLSConfiguration.makeClientConfiguration()
        if !verify { configuration.certificateVerification = .none }
        return configuration
    }

    static func probeConfiguration(_ settings: PostgresSettings, password: String?) throws(StoreError) -> PostgresConnection.Configuration {
        func context(verify: Bool) throws(StoreError) -> NIOSSLContext {
            do { return try NIOSSLContext(configuration: tlsConfiguration(verify: verify)) } catch {
                throw StoreError(.storage, "cannot set up TLS for \(settings.url): \(error)")
            }
        }
        let url = settings.url
        var configuration: PostgresConnection.Configuration
        if let socket = url.socketPath {
            configuration = .init(unixSocketPath: socket, username: url.user, password: password, database: url.database)
        } else {
            let tls: PostgresConnection.Configuration.TLS =
                switch url.tls {
                case .disable: .disable
                case .prefer: .prefer(try context(verify: false))
                case .require: .require(try context(verify: false))
                case .verifyFull: .require(try context(verify: true))
                }
            configuration = .init(
                host: url.host ?? "localhost", port: url.port, username: url.user, password: password, database: url.database, tls: tls)
        }
        configuration.options.connectTimeout = .seconds(Int64(settings.timeoutSeconds))
        configuration.options.additionalStartupParameters = [
            ("application_name", "pushgate-health"), ("statement_timeout", "\(settings.timeoutSeconds * 1000)"),
        ]
        return configuration
    }
}
