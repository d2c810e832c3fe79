import Logging
import PostgresNIO
import Pushgate

/// The versioned schema: each migration runs once, in its own transaction, recorded in
/// `pushgate_schema`. Instances starting together take an advisory lock, so one migrates and the
/// others find it done.
extension PostgresStore {
    /// Schema migrations; index + 1 is the version each one produces. Version 1 is the SQLite
    /// schema at its version 5, in PostgreSQL's types.
    static let migrations: [String] = [
        """
        CREATE TABLE registrations (
            app text COLLATE "C" NOT NULL,
            id text COLLATE "C" NOT NULL,
            platform text NOT NULL,
            handle text NOT NULL,
            owner text NOT NULL,
            template text,
            expires_at double precision,
            created_at double precision NOT NULL,
            updated_at double precision NOT NULL,
            PRIMARY KEY (app, id)
        );
        CREATE INDEX registrations_by_handle ON registrations (app, handle);
        CREATE TABLE registration_tags (
            app text COLLATE "C" NOT NULL,
            tag text COLLATE "C" NOT NULL,
            id text COLLATE "C" NOT NULL,
            PRIMARY KEY (app, tag, id)
        );
        CREATE INDEX registration_tags_by_id ON registration_tags (app, id, tag);
        CREATE TABLE reserved_ids (
            app text COLLATE "C" NOT NULL,
            id text COLLATE "C" NOT NULL,
            expires_at double precision NOT NULL,
            owner text NOT NULL DEFAULT '',
            PRIMARY KEY (app, id)
        );
        CREATE INDEX reserved_ids_by_owner ON reserved_ids (app, owner, expires_at);
        CREATE INDEX reserved_ids_by_expiry ON reserved_ids (app, expires_at);
        CREATE TABLE handle_removals (
            sequence bigserial PRIMARY KEY,
            app text NOT NULL,
            id text NOT NULL,
            platform text NOT NULL,
            handle text NOT NULL,
            outcome text NOT NULL,
            reason text,
            removed_at double precision NOT NULL
        );
        CREATE INDEX handle_removals_by_app ON handle_removals (app, sequence);
        CREATE TABLE secure_messages (
            app text COLLATE "C" NOT NULL,
            id text COLLATE "C" NOT NULL,
            recipient text NOT NULL,
            sender text NOT NULL,
            payload text NOT NULL,
            created_at double precision NOT NULL,
            expires_at double precision NOT NULL,
            read boolean NOT NULL DEFAULT false,
            PRIMARY KEY (app, id)
        );
        CREATE INDEX secure_messages_by_expiry ON secure_messages (expires_at);
        CREATE TABLE outbox_notifications (
            app text COLLATE "C" NOT NULL,
            id text COLLATE "C" NOT NULL,
            sender text NOT NULL,
            state text NOT NULL,
            platforms text NOT NULL,
            audience text NOT NULL,
            recipient text,
            payloads text NOT NULL,
            secure_id text,
            enqueued_at double precision NOT NULL,
            deliver_at double precision NOT NULL,
            started_at double precision,
            ended_at double precision,
            cursor text COLLATE "C",
            exhausted boolean NOT NULL DEFAULT false,
            next_page integer NOT NULL DEFAULT 0,
            claimed bigint NOT NULL DEFAULT 0,
            cancel_requested boolean NOT NULL DEFAULT false,
            lease_owner text,
            lease_expires double precision NOT NULL DEFAULT 0,
            PRIMARY KEY (app, id)
        );
        CREATE INDEX outbox_due ON outbox_notifications (app, deliver_at) WHERE ended_at IS NULL;
        CREATE INDEX outbox_cancelling ON outbox_notifications (app) WHERE ended_at IS NULL AND cancel_requested;
        CREATE INDEX outbox_leased ON outbox_notifications (lease_owner) WHERE ended_at IS NULL;
        CREATE INDEX outbox_ended ON outbox_notifications (ended_at) WHERE ended_at IS NOT NULL;
        CREATE INDEX outbox_by_sender ON outbox_notifications (app, sender, enqueued_at);
        CREATE INDEX outbox_by_time ON outbox_notifications (app, enqueued_at);
        CREATE TABLE outbox_pages (
            app text COLLATE "C" NOT NULL,
            notification_id text COLLATE "C" NOT NULL,
            number integer NOT NULL,
            after_id text COLLATE "C" NOT NULL,
            last_id text COLLATE "C" NOT NULL,
            lease_owner text,
            lease_expires double precision NOT NULL,
            claims integer NOT NULL DEFAULT 1,
            done boolean NOT NULL DEFAULT false,
            targets text,
            attempt integer NOT NULL DEFAULT 0,
            PRIMARY KEY (app, notification_id, number)
        );
        CREATE INDEX outbox_pages_open ON outbox_pages (app, notification_id, lease_expires) WHERE NOT done;
        CREATE INDEX outbox_pages_leased ON outbox_pages (lease_owner) WHERE NOT done;
        CREATE TABLE outbox_counts (
            app text COLLATE "C" NOT NULL,
            notification_id text COLLATE "C" NOT NULL,
            platform text NOT NULL,
            outcome text NOT NULL,
            count bigint NOT NULL,
            PRIMARY KEY (app, notification_id, platform, outcome)
        );
        CREATE TABLE outbox_failures (
            app text COLLATE "C" NOT NULL,
            notification_id text COLLATE "C" NOT NULL,
            registration_id text COLLATE "C" NOT NULL,
            platform text NOT NULL,
            handle text NOT NULL,
            outcome text NOT NULL,
            status integer,
            reason text,
            attempts integer NOT NULL,
            PRIMARY KEY (app, notification_id, registration_id)
        );
        """,
        // Version 2: browser subscriptions are found by their endpoint, a prefix of the handle:
        // a byte-ordered index whatever the database's collation.
        """
        CREATE INDEX registrations_by_handle_bytes ON registrations (app, (handle COLLATE "C"));
        """,
        // Version 3: the answers of pages on the wire, flushed as they arrive: a page claimed again
        // after a crash skips what was answered (one row per flush; deleted with the page's record).
        """
        CREATE TABLE outbox_answers (
            app text COLLATE "C" NOT NULL,
            notification_id text COLLATE "C" NOT NULL,
            page integer NOT NULL,
            first_id text COLLATE "C" NOT NULL,
            answers text NOT NULL,
            PRIMARY KEY (app, notification_id, page, first_id)
        );
        ALTER TABLE outbox_notifications ADD COLUMN shared boolean NOT NULL DEFAULT false;
        """,
        // Version 4: idempotent sends: a sender's Idempotency-Key, held by one notification at a time.
        """
        ALTER TABLE outbox_notifications ADD COLUMN idempotency_key text COLLATE "C";
        ALTER TABLE outbox_notifications ADD COLUMN idempotency_fingerprint text;
        CREATE UNIQUE INDEX outbox_idempotency ON outbox_notifications (app, sender, idempotency_key)
            WHERE idempotency_key IS NOT NULL;
        """,
        // Version 5: who owns a registration is a kind (0 a user, named by `owner`; 1 the hub,
        // `owner` empty), not a name: the hub's registrations were owned by the name `$hub`, which a
        // user could take.
        """
        ALTER TABLE registrations ADD COLUMN owner_kind integer NOT NULL DEFAULT 0;
        UPDATE registrations SET owner_kind = 1, owner = '' WHERE owner = '$hub';
        """,
        // Version 6: rows other features write with a page's record (outcome webhooks' events), in
        // its transaction; their feature reads them in order and removes them.
        """
        CREATE TABLE outbox_rows (
            sequence bigserial PRIMARY KEY,
            app text COLLATE "C" NOT NULL,
            notification_id text COLLATE "C" NOT NULL,
            page integer NOT NULL,
            kind text NOT NULL,
            body text NOT NULL CHECK (octet_length(body) <= 16384)
        );
        CREATE INDEX outbox_rows_by_app ON outbox_rows (app, sequence);
        """,
        // Version 7: Apple's newer push kinds: a registration's kind (empty for a device; a Live
        // Activity's push-to-start or update token), tokens walked in their own index (devices are
        // not in it); each activity's newest stamp (the compare-and-set that keeps an activity's
        // timestamps increasing across instances) and counts; broadcast channels by name.
        """
        ALTER TABLE registrations ADD COLUMN kind text COLLATE "C" NOT NULL DEFAULT '';
        CREATE INDEX registrations_by_kind ON registrations (app, kind, id) WHERE kind <> '';
        CREATE TABLE live_activities (
            app text COLLATE "C" NOT NULL,
            owner_kind integer NOT NULL,
            owner text COLLATE "C" NOT NULL,
            name text COLLATE "C" NOT NULL,
            stamp bigint NOT NULL,
            event text NOT NULL,
            sends bigint NOT NULL,
            immediate_sends bigint NOT NULL,
            content_state text,
            started_at double precision NOT NULL,
            updated_at double precision NOT NULL,
            ended_at double precision,
            channel text,
            PRIMARY KEY (app, owner_kind, owner, name)
        );
        CREATE INDEX live_activities_by_update ON live_activities (updated_at);
        CREATE TABLE apns_channels (
            app text COLLATE "C" NOT NULL,
            name text COLLATE "C" NOT NULL,
            channel_id text COLLATE "C" NOT NULL,
            storage_policy integer NOT NULL,
            created_at double precision NOT NULL,
            PRIMARY KEY (app, name)
        );
        CREATE UNIQUE INDEX apns_channels_by_id ON apns_channels (app, channel_id);
        """,
        // Version 8: outcome webhooks' events (outbox rows of kind `webhook:<receiver>`) carry
        // their delivery: due, leased to one poster, retried, parked, posted (kept a while).
        """
        ALTER TABLE outbox_rows ADD COLUMN due_at double precision NOT NULL DEFAULT 0;
        ALTER TABLE outbox_rows ADD COLUMN attempts integer NOT NULL DEFAULT 0;
        ALTER TABLE outbox_rows ADD COLUMN first_failed_at double precision;
        ALTER TABLE outbox_rows ADD COLUMN lease_owner text;
        ALTER TABLE outbox_rows ADD COLUMN lease_expires double precision NOT NULL DEFAULT 0;
        ALTER TABLE outbox_rows ADD COLUMN parked_at double precision;
        ALTER TABLE outbox_rows ADD COLUMN posted_at double precision;
        ALTER TABLE outbox_rows ADD COLUMN last_error text;
        CREATE INDEX outbox_rows_pending ON outbox_rows (app, kind, sequence) WHERE posted_at IS NULL AND parked_at IS NULL;
        CREATE INDEX outbox_rows_posted ON outbox_rows (posted_at) WHERE posted_at IS NOT NULL;
        """,
    ]

    /// The schema version this Pushgate migrates a database to: an opened store's database has it
    /// (a newer one refuses to open).
    public static var currentSchemaVersion: Int { migrations.count }

    /// Applies the migrations not yet applied; answers the versions it applied.
    @discardableResult
    public func migrate() async throws(StoreError) -> [Int] {
        let logger = self.logger
        return try await perform { connection in try await Self.migrate(on: connection, logger: logger) }
    }

    /// Applies the migrations not yet applied on a connection of its own, opened with
    /// `configuration` (the health probe's server and credentials) and closed afterwards: the
    /// store's pool need not run yet.
    @discardableResult
    static func migrate(configuration: PostgresConnection.Configuration, logger: Logger) async throws(StoreError) -> [Int] {
        var configuration = configuration
        configuration.options.additionalStartupParameters = [("application_name", "pushgate-migrate"), ("TimeZone", "UTC")]
        do {
            let connection = try await PostgresConnection.connect(configuration: configuration, id: 0, logger: logger)
            do {
                let applied = try await migrate(on: connection, logger: logger)
                try await connection.close()
                return applied
            } catch {
                try? await connection.close()
                throw error
            }
        } catch {
            throw storeError(error)
        }
    }

    /// The migrations not yet applied, in one transaction on `connection`.
    private static func migrate(on connection: PostgresConnection, logger: Logger) async throws -> [Int] {
        let count = migrations.count
        return try await transaction(on: connection, logger: logger) { connection in
            // One instance migrates at a time (the lock ends with the transaction).
            // A migration may take longer than a store call: no lock or statement timeout here.
            try await connection.query("SET LOCAL lock_timeout = 0", logger: logger)
            try await connection.query("SET LOCAL statement_timeout = 0", logger: logger)
            _ = try await connection.query("SELECT pg_advisory_xact_lock(7366147284)", logger: logger).collect()
            try await connection.query(
                """
                CREATE TABLE IF NOT EXISTS pushgate_schema (
                    version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())
                """, logger: logger)
            let current =
                try await connection.query("SELECT coalesce(max(version), 0) FROM pushgate_schema", logger: logger).all(Int.self)
                .first ?? 0
            guard current <= count else {
                throw StoreError(.storage, "the database has schema version \(current), newer than this Pushgate understands (\(count))")
            }
            var applied: [Int] = []
            for version in current..<count {
                // One statement at a time (the extended protocol takes one per query).
                for statement in migrations[version].split(separator: ";\n") where !statement.allSatisfy(\.isWhitespace) {
                    try await connection.query(PostgresQuery(unsafeSQL: String(statement)), logger: logger)
                }
                try await connection.query("INSERT INTO pushgate_schema (version) VALUES (\(version + 1))", logger: logger)
                applied.append(version + 1)
            }
            return applied
        }
    }

    /// Refreshes the planner's statistics (after a bulk load).
    package func analyze() async throws(StoreError) {
        let logger = self.logger
        _ = try await perform { connection in try await connection.query("ANALYZE", logger: logger) }
    }

    /// The schema version of the database.
    public func schemaVersion() async throws(StoreError) -> Int {
        let logger = self.logger
        return try await perform { connection in
            try await connection.query("SELECT coalesce(max(version), 0) FROM pushgate_schema", logger: logger).all(Int.self).first ?? 0
        }
    }
}
