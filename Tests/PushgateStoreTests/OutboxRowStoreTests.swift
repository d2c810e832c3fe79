import Foundation
import Pushgate
import Testing

/// Rows other features write with a page's record (``OutboxRecordRow``), on every store: they
/// commit with the record, a record that fails (a row the store refuses, written last in its
/// transaction) leaves neither the page's outcomes nor any of its rows, and they are read in
/// order and removed by their feature.
extension OutboxStoreTests {
    @Test(arguments: StoreKind.allCases)
    func rowsCommitOrFailWithThePagesRecord(kind: StoreKind) async throws {
        let (store, path) = try await make(kind)
        defer { cleanUp(path) }
        _ = try await seed(store, count: 30)
        let sent = try notification()
        try await store.enqueue(sent, lease: lease("a", until: 30))
        var pages: [OutboxPage] = []
        while case .page(let page) = try await store.claimPage(
            notificationID: sent.id, app: .default, lease: lease("a", until: 30), pageSize: 10, now: start)
        {
            pages.append(page)
        }
        #expect(pages.count == 3)
        let event = OutboxRecordRow(kind: "webhook.test", body: #"{"page":0}"#)
        #expect(
            try await store.completePage(
                notificationID: sent.id, app: .default, number: pages[0].number, counts: successCounts(pages[0]), failures: [], retry: nil,
                rows: [event, OutboxRecordRow(kind: "webhook.test", body: "second")]))

        // A refused row fails the record: nothing of it is stored, and the page stays open.
        let long = OutboxRecordRow(kind: "webhook.test", body: String(repeating: "é", count: OutboxRecordRow.maximumBodyBytes / 2 + 1))
        await #expect(throws: StoreError.self) {
            try await store.completePage(
                notificationID: sent.id, app: .default, number: pages[1].number, counts: successCounts(pages[1]), failures: [],
                retry: nil, rows: [OutboxRecordRow(kind: "webhook.test", body: "before the long one"), long])
        }
        #expect(
            try await store.notificationRecord(id: sent.id, app: .default)?.counts.values.reduce(0) { $0 + $1.values.reduce(0, +) } == 10)
        // The same page recorded again, without the refused row: it was still open.
        #expect(
            try await store.completePage(
                notificationID: sent.id, app: .default, number: pages[1].number, counts: successCounts(pages[1]), failures: [], retry: nil,
                rows: [OutboxRecordRow(kind: "webhook.test", body: "page 1")]))
        // A page recorded before writes no rows again.
        #expect(
            try await !store.completePage(
                notificationID: sent.id, app: .default, number: pages[0].number, counts: successCounts(pages[0]), failures: [], retry: nil,
                rows: [OutboxRecordRow(kind: "webhook.test", body: "twice")]))
        // The last page with the finish, in one transaction: its rows too.
        let last = try await store.completeLastPage(
            notificationID: sent.id, app: .default, number: pages[2].number, counts: successCounts(pages[2]), failures: [], owner: "a",
            now: start, rows: [OutboxRecordRow(kind: "webhook.finished", body: "done")])
        guard case .finished = last else {
            Issue.record("the last page did not finish the notification: \(last)")
            return
        }

        let rows = try await store.recordedRows(app: .default, after: 0, limit: 10)
        #expect(rows.map(\.row.body) == [#"{"page":0}"#, "second", "page 1", "done"])
        #expect(rows.map(\.page) == [pages[0].number, pages[0].number, pages[1].number, pages[2].number])
        #expect(rows.allSatisfy { $0.notificationID == sent.id })
        #expect(zip(rows, rows.dropFirst()).allSatisfy { $0.sequence < $1.sequence })
        #expect(try await store.recordedRows(app: try AppID("other"), after: 0, limit: 10).isEmpty, "rows are per app")
        #expect(try await store.recordedRows(app: .default, after: rows[1].sequence, limit: 1).map(\.row.body) == ["page 1"])
        #expect(try await store.removeRecordedRows(app: .default, through: rows[2].sequence) == 3)
        #expect(try await store.recordedRows(app: .default, after: 0, limit: 10).map(\.row.body) == ["done"])
        // Rows of a send whose pages are not stored (the outbox off) are written on their own.
        try await store.appendRows([OutboxRecordRow(kind: "webhook.test", body: "alone")], notificationID: "eph", page: 0, app: .default)
        #expect(try await store.recordedRows(app: .default, after: 0, limit: 10).map(\.row.body) == ["done", "alone"])
    }
}
