#ifndef PUSHGATE_CSQLITE_SHIM_H
#define PUSHGATE_CSQLITE_SHIM_H

#include <sqlite3.h>

// SQLITE_TRANSIENT is a macro casting -1 to a function pointer, which Swift cannot import. These
// wrappers bind copies of the caller's bytes (SQLite copies them before returning).
static inline int pushgate_sqlite_bind_text(sqlite3_stmt *statement, int index, const char *text, int length) {
    return sqlite3_bind_text(statement, index, text, length, SQLITE_TRANSIENT);
}

static inline int pushgate_sqlite_bind_blob(sqlite3_stmt *statement, int index, const void *bytes, int length) {
    return sqlite3_bind_blob(statement, index, bytes, length, SQLITE_TRANSIENT);
}

// SQLite's memory for short statements, set once before the first connection opens
// (sqlite3_config is variadic, which Swift cannot call; after sqlite3_initialize it is refused
// and changes nothing):
// - no page cache bulk: each page cache made its first 20 pages (87 KB) in one allocation,
//   and a statement with RETURNING makes one for its result table every time it runs;
// - statement journals in chunks just under 64 KiB: a chunk of 64 KiB (the default spill size)
//   is one glibc frees by consolidating its whole heap. The journal still moves to a temporary
//   file at the same size (past 15 pages), so its memory stays as bounded as before.
static inline void pushgate_sqlite_configure(void) {
    sqlite3_config(SQLITE_CONFIG_PAGECACHE, (void *)0, 0, 0);
    sqlite3_config(SQLITE_CONFIG_STMTJRNL_SPILL, 65536 - 64);
}

#endif
