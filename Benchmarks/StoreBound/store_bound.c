/*
 * The SQLite store's own bound for registration upserts: the statements the gateway's
 * `PUT /api/register/{id}` runs on an existing registration of a user (SQLiteStore.upsert with
 * its WriterGuard, then RegistrationWriter), in the transaction groups of its group commit
 * (GroupCommit: BEGIN IMMEDIATE, each write in SAVEPOINT pushgate_write … RELEASE, COMMIT), from
 * one plain program on one connection: no HTTP, no Swift, no concurrency. Its rate S is what the
 * store allows; scripts/bench-all.sh's upserts section sets the gateway's rate beside
 * 1 / (1/H + 1/S), H being the gateway's /healthz rate (issue 55, section 5).
 *
 *   cc -O2 -o store_bound store_bound.c -lsqlite3
 *   ./store_bound DATABASE IDS_FILE OWNER GROUP SECONDS [APP]
 *
 * DATABASE: the gateway's SQLite file (WAL; the gateway may have it open, idle). IDS_FILE: one
 * registration id a line, each stored already and owned by the user OWNER (the upsert of an
 * existing registration, as an app launch re-registers). Each upsert takes a random one of them
 * with its stored handle and the tags the benchmark's wrk script sends ("news", "topic-<1…1000>",
 * plus "username:OWNER" the gateway adds). GROUP upserts per transaction (the gateway's groups
 * hold at most one write per connection in flight: GROUP = the connection count is the most
 * sharing it can reach); groups until SECONDS have passed. APP: the app id (default "default").
 *
 * Statements as the store runs them (same SQL text), per upsert:
 *   SAVEPOINT pushgate_write
 *   SELECT owner, owner_kind FROM registrations WHERE app = ? AND id = ?           (the id's owner)
 *   SELECT id, owner, owner_kind FROM registrations INDEXED BY registrations_by_handle
 *     WHERE app = ? AND handle = ?                                                  (handle holders)
 *   SELECT 1 FROM reserved_ids LIMIT 1          (RegistrationWriter: any reservation to consume?)
 *   [DELETE FROM reserved_ids WHERE app = ? AND id = ?]                          (only when any)
 *   INSERT INTO registrations … ON CONFLICT (app, id) DO NOTHING                  (0 rows: exists)
 *   UPDATE registrations SET … WHERE app = ? AND id = ?
 *   DELETE FROM registration_tags WHERE app = ? AND id = ?
 *   INSERT INTO registration_tags (app, tag, id) VALUES (?, ?, ?)                  (× 3 tags)
 *   RELEASE pushgate_write
 * and per group BEGIN IMMEDIATE … COMMIT, then the connection's passive checkpoint once the log
 * holds 1000 frames (SQLiteConnection.checkpointIfDue). Connection settings as SQLiteStore.open:
 * WAL, synchronous FULL, foreign_keys ON, journal_size_limit 16 MiB, busy timeout 5 s, and
 * SQLite's memory configuration of Sources/CSQLite/shim.h.
 *
 * It checks its own work: every id stored and OWNER's, no other user holding a handle, every
 * INSERT a no-op and every UPDATE one row, and at the end each upserted id with its 3 tags.
 * Output (one line, stdout):
 *   store bound: N upserts in T s = R upserts/s (groups of G, K commits; commit p50 A ms, p99 B ms;
 *   CPU C us per upsert)
 * Exit 1 (with a message on stderr) on any failure.
 */
#include <sqlite3.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

static sqlite3 *db;
static int wal_frames = 0;

static void fail(const char *what) {
    fprintf(stderr, "store_bound: %s: %s\n", what, db ? sqlite3_errmsg(db) : "no database");
    exit(1);
}

static double now_seconds(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

static double wall_seconds(void) {
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

static double cpu_seconds(void) {
    struct rusage usage;
    getrusage(RUSAGE_SELF, &usage);
    return usage.ru_utime.tv_sec + usage.ru_utime.tv_usec / 1e6 + usage.ru_stime.tv_sec + usage.ru_stime.tv_usec / 1e6;
}

static void exec(const char *sql) {
    char *message = NULL;
    if (sqlite3_exec(db, sql, NULL, NULL, &message) != SQLITE_OK) {
        fprintf(stderr, "store_bound: %s: %s\n", sql, message ? message : "unknown error");
        exit(1);
    }
}

static sqlite3_stmt *prepare(const char *sql) {
    sqlite3_stmt *statement = NULL;
    if (sqlite3_prepare_v2(db, sql, -1, &statement, NULL) != SQLITE_OK) fail(sql);
    return statement;
}

static void text(sqlite3_stmt *statement, int index, const char *value) {
    if (sqlite3_bind_text(statement, index, value, -1, SQLITE_TRANSIENT) != SQLITE_OK) fail("bind");
}

/* Steps a statement that returns no rows, then resets it. */
static void run(sqlite3_stmt *statement, const char *what) {
    int code;
    while ((code = sqlite3_step(statement)) == SQLITE_ROW) {}
    if (code != SQLITE_DONE) fail(what);
    sqlite3_reset(statement);
    sqlite3_clear_bindings(statement);
}

static int wal_hook(void *context, sqlite3 *database, const char *name, int frames) {
    (void)context; (void)database; (void)name;
    wal_frames = frames;
    return SQLITE_OK;
}

/* xorshift64*: the random id and topic of each upsert. */
static uint64_t random_state;
static uint64_t next_random(void) {
    random_state ^= random_state >> 12;
    random_state ^= random_state << 25;
    random_state ^= random_state >> 27;
    return random_state * 0x2545F4914F6CDD1DULL;
}

static int compare_doubles(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
    if (argc < 6) {
        fprintf(stderr, "usage: %s DATABASE IDS_FILE OWNER GROUP SECONDS [APP]\n", argv[0]);
        return 2;
    }
    const char *path = argv[1], *ids_path = argv[2], *owner = argv[3];
    long group = atol(argv[4]);
    double duration = atof(argv[5]);
    const char *app = argc > 6 ? argv[6] : "default";
    if (group < 1 || duration <= 0) {
        fprintf(stderr, "store_bound: GROUP must be at least 1 and SECONDS above 0\n");
        return 2;
    }
    char own_tag[512];
    snprintf(own_tag, sizeof own_tag, "username:%s", owner);

    /* SQLite's memory settings as the gateway makes them (before the first connection). */
    sqlite3_config(SQLITE_CONFIG_PAGECACHE, (void *)0, 0, 0);
    sqlite3_config(SQLITE_CONFIG_STMTJRNL_SPILL, 65536 - 64);
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK) fail(path);
    sqlite3_busy_timeout(db, 5000);
    exec("PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL; PRAGMA foreign_keys = ON; PRAGMA journal_size_limit = 16777216;");
    sqlite3_wal_hook(db, wal_hook, NULL);

    /* The ids, each stored, the user's, with its handle. */
    FILE *file = fopen(ids_path, "r");
    if (!file) { perror(ids_path); return 1; }
    size_t count = 0, capacity = 1024;
    char **ids = malloc(capacity * sizeof *ids), **handles = malloc(capacity * sizeof *handles);
    char line[512];
    sqlite3_stmt *stored = prepare("SELECT handle, owner, owner_kind FROM registrations WHERE app = ? AND id = ?");
    while (fgets(line, sizeof line, file)) {
        line[strcspn(line, "\r\n")] = 0;
        if (!*line) continue;
        if (count == capacity) {
            capacity *= 2;
            ids = realloc(ids, capacity * sizeof *ids);
            handles = realloc(handles, capacity * sizeof *handles);
        }
        text(stored, 1, app);
        text(stored, 2, line);
        if (sqlite3_step(stored) != SQLITE_ROW) { fprintf(stderr, "store_bound: registration %s is not stored\n", line); return 1; }
        if (strcmp((const char *)sqlite3_column_text(stored, 1), owner) != 0 || sqlite3_column_int64(stored, 2) != 0) {
            fprintf(stderr, "store_bound: registration %s is not %s's\n", line, owner);
            return 1;
        }
        ids[count] = strdup(line);
        handles[count] = strdup((const char *)sqlite3_column_text(stored, 0));
        count++;
        sqlite3_reset(stored);
    }
    fclose(file);
    sqlite3_finalize(stored);
    if (count == 0) { fprintf(stderr, "store_bound: no ids in %s\n", ids_path); return 1; }
    char *touched = calloc(count, 1);

    /* The store's statements, prepared once (the gateway's cache holds them prepared). */
    sqlite3_stmt *id_owner = prepare("SELECT owner, owner_kind FROM registrations WHERE app = ? AND id = ?");
    sqlite3_stmt *holders = prepare(
        "SELECT id, owner, owner_kind FROM registrations INDEXED BY registrations_by_handle WHERE app = ? AND handle = ?");
    sqlite3_stmt *reserved = prepare("SELECT 1 FROM reserved_ids LIMIT 1");
    sqlite3_stmt *delete_reservation = prepare("DELETE FROM reserved_ids WHERE app = ? AND id = ?");
    sqlite3_stmt *insert = prepare(
        "INSERT INTO registrations (app, id, platform, handle, owner, owner_kind, template, expires_at, created_at, updated_at)\n"
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (app, id) DO NOTHING");
    sqlite3_stmt *update = prepare(
        "UPDATE registrations SET platform = ?, handle = ?, owner = ?, owner_kind = ?, template = ?, expires_at = ?, updated_at = ?\n"
        "WHERE app = ? AND id = ?");
    sqlite3_stmt *delete_tags = prepare("DELETE FROM registration_tags WHERE app = ? AND id = ?");
    sqlite3_stmt *insert_tag = prepare("INSERT INTO registration_tags (app, tag, id) VALUES (?, ?, ?)");

    random_state = (uint64_t)time(NULL) * 2654435761ULL | 1;
    size_t groups_capacity = 4096, groups = 0;
    double *commit_ms = malloc(groups_capacity * sizeof *commit_ms);
    long upserts = 0;
    double cpu_start = cpu_seconds(), start = now_seconds(), elapsed = 0;
    while (elapsed < duration) {
        double group_start = now_seconds();
        exec("BEGIN IMMEDIATE");
        for (long g = 0; g < group; g++) {
            size_t n = next_random() % count;
            const char *id = ids[n], *handle = handles[n];
            char topic[32];
            snprintf(topic, sizeof topic, "topic-%d", (int)(next_random() % 1000) + 1);
            double time_now = wall_seconds();
            exec("SAVEPOINT pushgate_write");
            /* The id's stored owner: the user's own registration. */
            text(id_owner, 1, app);
            text(id_owner, 2, id);
            if (sqlite3_step(id_owner) != SQLITE_ROW) { fprintf(stderr, "store_bound: %s vanished\n", id); return 1; }
            if (strcmp((const char *)sqlite3_column_text(id_owner, 0), owner) != 0) { fprintf(stderr, "store_bound: %s changed owner\n", id); return 1; }
            sqlite3_reset(id_owner);
            sqlite3_clear_bindings(id_owner);
            /* The handle's holders: none but this id (or the user's own). */
            text(holders, 1, app);
            text(holders, 2, handle);
            int code;
            while ((code = sqlite3_step(holders)) == SQLITE_ROW) {
                const char *holder_id = (const char *)sqlite3_column_text(holders, 0);
                const char *holder = (const char *)sqlite3_column_text(holders, 1);
                if (strcmp(holder_id, id) != 0 && (sqlite3_column_int64(holders, 2) != 0 || strcmp(holder, owner) != 0)) {
                    fprintf(stderr, "store_bound: handle of %s held by another user's %s\n", id, holder_id);
                    return 1;
                }
            }
            if (code != SQLITE_DONE) fail("holders");
            sqlite3_reset(holders);
            sqlite3_clear_bindings(holders);
            /* RegistrationWriter: a reservation to consume only when the store holds any. */
            int any_reserved = sqlite3_step(reserved) == SQLITE_ROW;
            sqlite3_reset(reserved);
            if (any_reserved) {
                text(delete_reservation, 1, app);
                text(delete_reservation, 2, id);
                run(delete_reservation, "delete reservation");
            }
            text(insert, 1, app);
            text(insert, 2, id);
            text(insert, 3, "apns");
            text(insert, 4, handle);
            text(insert, 5, owner);
            sqlite3_bind_int64(insert, 6, 0);
            sqlite3_bind_null(insert, 7);
            sqlite3_bind_null(insert, 8);
            sqlite3_bind_double(insert, 9, time_now);
            sqlite3_bind_double(insert, 10, time_now);
            run(insert, "insert");
            if (sqlite3_changes(db) != 0) { fprintf(stderr, "store_bound: %s was inserted, not updated\n", id); return 1; }
            text(update, 1, "apns");
            text(update, 2, handle);
            text(update, 3, owner);
            sqlite3_bind_int64(update, 4, 0);
            sqlite3_bind_null(update, 5);
            sqlite3_bind_null(update, 6);
            sqlite3_bind_double(update, 7, time_now);
            text(update, 8, app);
            text(update, 9, id);
            run(update, "update");
            if (sqlite3_changes(db) != 1) { fprintf(stderr, "store_bound: the update of %s changed %d rows\n", id, sqlite3_changes(db)); return 1; }
            text(delete_tags, 1, app);
            text(delete_tags, 2, id);
            run(delete_tags, "delete tags");
            const char *tags[3] = {"news", topic, own_tag};
            for (int t = 0; t < 3; t++) {
                text(insert_tag, 1, app);
                text(insert_tag, 2, tags[t]);
                text(insert_tag, 3, id);
                run(insert_tag, "insert tag");
            }
            exec("RELEASE pushgate_write");
            touched[n] = 1;
            upserts++;
        }
        exec("COMMIT");
        /* releaseStatements: a passive checkpoint once the log holds 1000 frames. */
        if (wal_frames >= 1000) {
            wal_frames = 0;
            sqlite3_wal_checkpoint_v2(db, NULL, SQLITE_CHECKPOINT_PASSIVE, NULL, NULL);
        }
        double finished = now_seconds();
        if (groups == groups_capacity) {
            groups_capacity *= 2;
            commit_ms = realloc(commit_ms, groups_capacity * sizeof *commit_ms);
        }
        commit_ms[groups++] = (finished - group_start) * 1e3;
        elapsed = finished - start;
    }
    double cpu = cpu_seconds() - cpu_start;

    /* Every upserted id holds its 3 tags, the user's own among them. */
    sqlite3_stmt *tag_count = prepare(
        "SELECT count(*), sum(tag = ?) FROM registration_tags INDEXED BY registration_tags_by_id WHERE app = ? AND id = ?");
    for (size_t n = 0; n < count; n++) {
        if (!touched[n]) continue;
        text(tag_count, 1, own_tag);
        text(tag_count, 2, app);
        text(tag_count, 3, ids[n]);
        if (sqlite3_step(tag_count) != SQLITE_ROW) fail("tag count");
        if (sqlite3_column_int64(tag_count, 0) != 3 || sqlite3_column_int64(tag_count, 1) != 1) {
            fprintf(stderr, "store_bound: %s holds %lld tags (%lld of them %s), not 3\n", ids[n],
                    (long long)sqlite3_column_int64(tag_count, 0), (long long)sqlite3_column_int64(tag_count, 1), own_tag);
            return 1;
        }
        sqlite3_reset(tag_count);
    }
    sqlite3_finalize(tag_count);

    qsort(commit_ms, groups, sizeof *commit_ms, compare_doubles);
    double p50 = commit_ms[(size_t)(0.50 * (groups - 1))], p99 = commit_ms[(size_t)(0.99 * (groups - 1))];
    printf("store bound: %ld upserts in %.2f s = %.0f upserts/s (groups of %ld, %zu commits; commit p50 %.2f ms, p99 %.2f ms; "
           "CPU %.1f us per upsert)\n",
           upserts, elapsed, upserts / elapsed, group, groups, p50, p99, cpu * 1e6 / upserts);

    sqlite3_finalize(id_owner);
    sqlite3_finalize(holders);
    sqlite3_finalize(reserved);
    sqlite3_finalize(delete_reservation);
    sqlite3_finalize(insert);
    sqlite3_finalize(update);
    sqlite3_finalize(delete_tags);
    sqlite3_finalize(insert_tag);
    sqlite3_close(db);
    return 0;
}
