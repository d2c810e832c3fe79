import Pushgate

/// The versioned schema: each migration runs once, in its own transaction, and records its
/// version in `PRAGMA user_version`.
extension SQLiteStore {
    /// Schema migrations; index + 1 is the version each one produces.
    static let migrations: [String] = [
        """
        CREATE TABLE registrations (
            app TEXT NOT NULL,
            id TEXT NOT NULL,
            platform TEXT NOT NULL,
            handle TEXT NOT NULL,
            owner TEXT NOT NULL,
            template TEXT,
            expires_at REAL,
            created_at REAL NOT NULL,
            updated_at REAL NOT NULL,
            PRIMARY KEY (app, id)
        ) WITHOUT ROWID;
        CREATE INDEX registrations_by_handle ON registrations (app, handle);
        CREATE TABLE registration_tags (
            app TEXT NOT NULL,
            tag TEXT NOT NULL,
            id TEXT NOT NULL,
            PRIMARY KEY (app, tag, id)
        ) WITHOUT ROWID;
        CREATE INDEX registration_tags_by_id ON registration_tags (app, id, tag);
        CREATE TABLE reserved_ids (
            app TEXT NOT NULL,
            id TEXT NOT NULL,
            expires_at REAL NOT NULL,
            PRIMARY KEY (app, id)
        ) WITHOUT ROWID;
        CREATE TABLE handle_removals (
            sequence INTEGER PRIMARY KEY AUTOINCREMENT,
            app TEXT NOT NULL,
            id TEXT NOT NULL,
            platform TEXT NOT NULL,
            handle TEXT NOT NULL,
            outcome TEXT NOT NULL,
            reason TEXT,
            removed_at REAL NOT NULL
        );
        """,
        """
        CREATE TABLE secure_messages (
            app TEXT NOT NULL,
            id TEXT NOT NULL,
            recipient TEXT NOT NULL,
            sender TEXT NOT NULL,
            payload TEXT NOT NULL,
            created_at REAL NOT NULL,
            expires_at REAL NOT NULL,
            read INTEGER NOT NULL DEFAULT 0,
            PRIMARY KEY (app, id)
        ) WITHOUT ROWID;
        CREATE INDEX secure_messages_by_expiry ON secure_messages (expires_at);
        """,
        // Reservations belong to the user who made them, so each user's can be capped.
        """
        ALTER TABLE reserved_ids ADD COLUMN owner TEXT NOT NULL DEFAULT '';
        CREATE INDEX reserved_ids_by_owner ON reserved_ids (app, owner, expires_at);
        CREATE INDEX reserved_ids_by_expiry ON reserved_ids (app, expires_at);
        """,
        // The outbox: notifications, their leased pages, outcome counts and failed targets.
        """
        CREATE TABLE outbox_notifications (
            app TEXT NOT NULL,
            id TEXT NOT NULL,
            sender TEXT NOT NULL,
            state TEXT NOT NULL,
            platforms TEXT NOT NULL,
            audience TEXT NOT NULL,
            payloads TEXT NOT NULL,
            secure_id TEXT,
            enqueued_at REAL NOT NULL,
            deliver_at REAL NOT NULL,
            started_at REAL,
            ended_at REAL,
            cursor TEXT,
            exhausted INTEGER NOT NULL DEFAULT 0,
            next_page INTEGER NOT NULL DEFAULT 0,
            claimed INTEGER NOT NULL DEFAULT 0,
            cancel_requested INTEGER NOT NULL DEFAULT 0,
            lease_owner TEXT,
            lease_expires REAL NOT NULL DEFAULT 0,
            PRIMARY KEY (app, id)
        ) WITHOUT ROWID;
        CREATE INDEX outbox_due ON outbox_notifications (app, deliver_at) WHERE ended_at IS NULL;
        CREATE INDEX outbox_cancelling ON outbox_notifications (app) WHERE ended_at IS NULL AND cancel_requested = 1;
        CREATE INDEX outbox_leased ON outbox_notifications (lease_owner) WHERE ended_at IS NULL;
        CREATE INDEX outbox_ended ON outbox_notifications (ended_at) WHERE ended_at IS NOT NULL;
        CREATE INDEX outbox_by_sender ON outbox_notifications (app, sender, enqueued_at);
        CREATE INDEX outbox_by_time ON outbox_notifications (app, enqueued_at);
        CREATE TABLE outbox_pages (
            app TEXT NOT NULL,
            notification_id TEXT NOT NULL,
            number INTEGER NOT NULL,
            after_id TEXT NOT NULL,
            last_id TEXT NOT NULL,
            lease_owner TEXT,
            lease_expires REAL NOT NULL,
            claims INTEGER NOT NULL DEFAULT 1,
            done INTEGER NOT NULL DEFAULT 0,
            PRIMARY KEY (app, notification_id, number)
        ) WITHOUT ROWID;
        CREATE INDEX outbox_pages_open ON outbox_pages (app, notification_id, lease_expires) WHERE done = 0;
        CREATE INDEX outbox_pages_leased ON outbox_pages (lease_owner) WHERE done = 0;
        CREATE TABLE outbox_counts (
            app TEXT NOT NULL,
            notification_id TEXT NOT NULL,
            platform TEXT NOT NULL,
            outcome TEXT NOT NULL,
            count INTEGER NOT NULL,
            PRIMARY KEY (app, notification_id, platform, outcome)
        ) WITHOUT ROWID;
        CREATE TABLE outbox_failures (
            app TEXT NOT NULL,
            notification_id TEXT NOT NULL,
            registration_id TEXT NOT NULL,
            platform TEXT NOT NULL,
            handle TEXT NOT NULL,
            outcome TEXT NOT NULL,
            status INTEGER,
            reason TEXT,
            attempts INTEGER NOT NULL,
            PRIMARY KEY (app, notification_id, registration_id)
        ) WITHOUT ROWID;
        """,
        // FCM topic and condition sends; retry pages of throttled targets (their own target list,
        // due when their unowned lease expires).
        """
        ALTER TABLE outbox_notifications ADD COLUMN recipient TEXT;
        ALTER TABLE outbox_pages ADD COLUMN targets TEXT;
        ALTER TABLE outbox_pages ADD COLUMN attempt INTEGER NOT NULL DEFAULT 0;
        """,
        // The answers of pages on the wire, flushed as they arrive: a page claimed again after a
        // crash skips what was answered (one row per flush; deleted with the page's record).
        // Shared notifications (asynchronous sends): every instance may claim their pages.
        """
        CREATE TABLE outbox_answers (
            app TEXT NOT NULL,
            notification_id TEXT NOT NULL,
            page INTEGER NOT NULL,
            first_id TEXT NOT NULL,
            answers TEXT NOT NULL,
            PRIMARY KEY (app, notification_id, page, first_id)
        ) WITHOUT ROWID;
        ALTER TABLE outbox_notifications ADD COLUMN shared INTEGER NOT NULL DEFAULT 0;
        """,
        // Idempotent sends: a sender's Idempotency-Key, held by one notification at a time.
        """
        ALTER TABLE outbox_notifications ADD COLUMN idempotency_key TEXT;
        ALTER TABLE outbox_notifications ADD COLUMN idempotency_fingerprint TEXT;
        CREATE UNIQUE INDEX outbox_idempotency ON outbox_notifications (app, sender, idempotency_key)
            WHERE idempotency_key IS NOT NULL;
        """,
        // Who owns a registration is a kind (0 a user, named by `owner`; 1 the hub, `owner` empty),
        // not a name: the hub's registrations were owned by the name `$hub`, which a user could take.
        """
        ALTER TABLE registrations ADD COLUMN owner_kind INTEGER NOT NULL DEFAULT 0;
        UPDATE registrations SET owner_kind = 1, owner = '' WHERE owner = '$hub';
        """,
        // Rows other features write with a page's record (outcome webhooks' events), in its
        // transaction; their feature reads them in order and removes them.
        """
        CREATE TABLE outbox_rows (
            sequence INTEGER PRIMARY KEY AUTOINCREMENT,
            app TEXT NOT NULL,
            notification_id TEXT NOT NULL,
            page INTEGER NOT NULL,
            kind TEXT NOT NULL,
            body TEXT NOT NULL CHECK (length(CAST(body AS BLOB)) <= 16384)
        );
        CREATE INDEX outbox_rows_by_app ON outbox_rows (app, sequence);
        """,
        // Apple's newer push kinds: a registration's kind (empty for a device; a Live Activity's
        // push-to-start or update token), tokens walked in their own index (devices are not in
        // it); each activity's newest stamp (the compare-and-set that keeps an activity's
        // timestamps increasing across instances) and counts; broadcast channels by name.
        """
        ALTER TABLE registrations ADD COLUMN kind TEXT NOT NULL DEFAULT '';
        CREATE INDEX registrations_by_kind ON registrations (app, kind, id) WHERE kind <> '';
        CREATE TABLE live_activities (
            app TEXT NOT NULL,
            owner_kind INTEGER NOT NULL,
            owner TEXT NOT NULL,
            name TEXT NOT NULL,
            stamp INTEGER NOT NULL,
            event TEXT NOT NULL,
            sends INTEGER NOT NULL,
            immediate_sends INTEGER NOT NULL,
            content_state TEXT,
            started_at REAL NOT NULL,
            updated_at REAL NOT NULL,
            ended_at REAL,
            channel TEXT,
            PRIMARY KEY (app, owner_kind, owner, name)
        ) WITHOUT ROWID;
        CREATE INDEX live_activities_by_update ON live_activities (updated_at);
        CREATE TABLE apns_channels (
            app TEXT NOT NULL,
            name TEXT NOT NULL,
            channel_id TEXT NOT NULL,
            storage_policy INTEGER NOT NULL,
            created_at REAL NOT NULL,
            PRIMARY KEY (app, name)
        ) WITHOUT ROWID;
        CREATE UNIQUE INDEX apns_channels_by_id ON apns_channels (app, channel_id);
        """,
        // Outcome webhooks' events (outbox rows of kind `webhook:<receiver>`) carry their
        // delivery: due, leased, retried, parked, posted (kept a while).
        """
        ALTER TABLE outbox_rows ADD COLUMN due_at REAL NOT NULL DEFAULT 0;
        ALTER TABLE outbox_rows ADD COLUMN attempts INTEGER NOT NULL DEFAULT 0;
        ALTER TABLE outbox_rows ADD COLUMN first_failed_at REAL;
        ALTER TABLE outbox_rows ADD COLUMN lease_owner TEXT;
        ALTER TABLE outbox_rows ADD COLUMN lease_expires REAL NOT NULL DEFAULT 0;
        ALTER TABLE outbox_rows ADD COLUMN parked_at REAL;
        ALTER TABLE outbox_rows ADD COLUMN posted_at REAL;
        ALTER TABLE outbox_rows ADD COLUMN last_error TEXT;
        CREATE INDEX outbox_rows_pending ON outbox_rows (app, kind, sequence) WHERE posted_at IS NULL AND parked_at IS NULL;
        CREATE INDEX outbox_rows_posted ON outbox_rows (posted_at) WHERE posted_at IS NOT NULL;
        """,
    ]

    static func migrate(_ connection: SQLiteConnection) throws(StoreError) {
        let current = try connection.userVersion
        guard current <= migrations.count else {
            throw StoreError(
                .storage, "the database has schema version \(current), newer than this Pushgate understands (\(migrations.count))")
        }
        for version in current..<migrations.count {
            try connection.transaction { () throws(StoreError) in
                try connection.execute(migrations[version])
                try connection.execute("PRAGMA user_version = \(version + 1)")
            }
        }
    }
}
