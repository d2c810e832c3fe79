import Foundation
import Pushgate
import PushgatePostgres
import PushgateSQLite
import Testing

/// A page of an audience costs the same whatever the audience: measured in SQLite's own
/// virtual-machine steps (not seconds, which this shared machine cannot keep steady).
@Suite struct AudiencePagingTests {
    /// `common` on the first `common` registrations (ids in order), `username:u<k>` on every
    /// registration for k = index % 1000, and `rare` on every 5,000th.
    /// `count` registrations: `common` on the first `common`, `few` on the first `few`, `rare` on
    /// one in 5,000, `username:u…` on one in 1,000 each.
    static func fill(_ store: any RegistrationStore, count: Int, common: Int, few: Int = 0) async throws {
        var batch: [Registration] = []
        for index in 0..<count {
            let id = try RegistrationID(String(format: "r%08d", index))
            var tags = ["username:u\(index % 1000)"]
            if index < common { tags.append("common") }
            if index < few { tags.append("few") }
            if index % 5000 == 0 { tags.append("rare") }
            batch.append(try registration(id, index % 3 == 0 ? .fcm : .apns, tags: tags, owner: "u\(index % 1000)"))
            if batch.count == 20_000 {
                try await store.restore(batch, now: start)
                batch.removeAll(keepingCapacity: true)
            }
        }
        try await store.restore(batch, now: start)
    }

    /// The steps of the page that starts halfway through the audience.
    static func middlePageSteps(_ store: SQLiteStore, _ expression: String, audience: Int) async throws -> Int {
        let after = String(format: "r%08d", audience / 2)
        let page = try await store.explainPage(
            matching: try TagExpression(parsing: expression), platforms: .all, app: .default, after: after, limit: 500, now: start)
        #expect(page.ids.count == 500)
        return page.virtualMachineSteps
    }

    @Test func aPageOfACommonTagCostsTheSameAt10000And200000Matches() async throws {
        // One table of 200,000: `few` matches 10,000 of them, `common` every one.
        let path = NSTemporaryDirectory() + "pushgate-paging-\(UUID().uuidString).sqlite"
        defer { cleanUp(path) }
        let store = try await SQLiteStore.open(path: path)
        try await Self.fill(store, count: 200_000, common: 200_000, few: 10_000)

        for (small, large) in [("few", "common"), ("few || rare", "common || rare"), ("few && !rare", "common && !rare")] {
            let expression = "\(small) / \(large)"
            let few = try await Self.middlePageSteps(store, small, audience: 10_000)
            let many = try await Self.middlePageSteps(store, large, audience: 200_000)
            // A list subquery (id IN (SELECT …)) would make the large page cost ~20 times the small one.
            #expect(Double(many) < Double(few) * 1.5, "\(expression): \(few) steps at 10,000 matches, \(many) at 200,000")
        }
    }

    /// The same on PostgreSQL, in its own plan of the page as run (`EXPLAIN ANALYZE, BUFFERS`):
    /// the buffers a middle page touches stay flat from 10,000 to 200,000 matches, and every
    /// table is reached through an index, never a sequential scan.
    @Test(.enabled(if: PostgresTesting.isAvailable))
    func onPostgreSQLAPageOfACommonTagCostsTheSameAt10000And200000Matches() async throws {
        // One table of 200,000: `few` matches 10,000 of them, `common` every one.
        let store = try await PostgresTesting.freshStore()
        try await Self.fill(store, count: 200_000, common: 200_000, few: 10_000)
        try await store.analyze()

        func middlePage(_ store: PostgresStore, _ expression: String, audience: Int) async throws -> (buffers: Int, plan: String) {
            let page = try await store.explainPage(
                matching: try TagExpression(parsing: expression), platforms: .all, app: .default,
                after: String(format: "r%08d", audience / 2), limit: 500, now: start)
            #expect(page.ids.count == 500)
            let explained = try #require(try JSONSerialization.jsonObject(with: Data(page.plan.utf8)) as? [[String: Any]])
            let plan = try #require(explained.first?["Plan"] as? [String: Any])
            let buffers = (plan["Shared Hit Blocks"] as? Int ?? 0) + (plan["Shared Read Blocks"] as? Int ?? 0)
            return (buffers, page.plan)
        }
        for (small, expression) in [("few", "common"), ("few || rare", "common || rare"), ("few && !rare", "common && !rare")] {
            let few = try await middlePage(store, small, audience: 10_000)
            let many = try await middlePage(store, expression, audience: 200_000)
            #expect(
                many.buffers < few.buffers * 3 / 2 + 50,
                "\(expression): \(few.buffers) buffers at 10,000 matches, \(many.buffers) at 200,000")
            // A page near the end of the large audience costs what one near its start does, a few
            // buffers per target (a merge join would read every id before the cursor).
            let early = try await middlePage(store, expression, audience: 20_000)
            let late = try await middlePage(store, expression, audience: 380_000)
            #expect(late.buffers < early.buffers * 3 / 2 + 50, "\(expression): \(early.buffers) buffers early, \(late.buffers) late")
            #expect(late.buffers < 500 * 12, "\(expression): \(late.buffers) buffers for a page of 500")
            for plan in [few.plan, many.plan, early.plan, late.plan] {
                #expect(!plan.contains("Seq Scan"), "\(expression):\n\(plan)")
                #expect(plan.contains("registration_tags_pkey"), "\(expression):\n\(plan)")
            }
            print(
                "PostgreSQL page of '\(small)' / '\(expression)': \(few.buffers) buffers at 10,000 matches, \(many.buffers) at 200,000; early \(early.buffers), late \(late.buffers)"
            )
        }
    }

    @Test func audienceQueriesWalkAnIndexWithoutListSubqueries() async throws {
        let path = NSTemporaryDirectory() + "pushgate-paging-\(UUID().uuidString).sqlite"
        defer { cleanUp(path) }
        let store = try await SQLiteStore.open(path: path)
        try await Self.fill(store, count: 20_000, common: 20_000)
        for expression in ["common", "common || rare", "username:u7 || username:u8 || rare"] {
            let page = try await store.explainPage(
                matching: try TagExpression(parsing: expression), platforms: .all, app: .default, after: "", limit: 500, now: start)
            let plan = page.plan.joined(separator: "\n")
            #expect(!plan.contains("LIST SUBQUERY"), "\(expression):\n\(plan)")
            #expect(plan.contains("SEARCH t USING PRIMARY KEY (app=? AND tag=? AND id>?)"), "\(expression):\n\(plan)")
        }
    }

    /// `username:u && rare` must be driven by the rare tag, whichever side it is written on.
    @Test func aConjunctionIsDrivenByItsSmallerSide() async throws {
        let path = NSTemporaryDirectory() + "pushgate-paging-\(UUID().uuidString).sqlite"
        defer { cleanUp(path) }
        let store = try await SQLiteStore.open(path: path)
        try await Self.fill(store, count: 100_000, common: 100_000)
        var steps: [Int] = []
        for expression in ["common && rare", "rare && common"] {
            let page = try await store.explainPage(
                matching: try TagExpression(parsing: expression), platforms: .all, app: .default, after: "", limit: 500, now: start)
            #expect(page.ids.count == 20)
            steps.append(page.virtualMachineSteps)
        }
        // Walking `common` would visit 100,000 index entries; walking `rare` visits 20.
        #expect(steps.allSatisfy { $0 < 5_000 }, "steps: \(steps)")
    }

    /// The send path's pages (id and handle only) list exactly what the registration listing
    /// lists, in the same order, for each kind of walk, in SQLite and in memory; a page is read
    /// only when the sequence is asked for it.
    @Test func deliveryTargetsPageThroughTheSameAudienceAsTheListing() async throws {
        let path = NSTemporaryDirectory() + "pushgate-paging-\(UUID().uuidString).sqlite"
        defer { cleanUp(path) }
        let sqlite = try await SQLiteStore.open(path: path)
        let memory = InMemoryRegistrationStore()
        var all: [Registration] = []
        for index in 0..<3_000 {
            var tags = ["username:u\(index % 7)"]
            if index % 3 == 0 { tags.append("news") }
            if index % 11 == 0 { tags.append("sports") }
            all.append(
                try registration(
                    try RegistrationID(String(format: "d%08d", (index * 7919) % 3_000)), index % 2 == 0 ? .apns : .fcm, tags: tags,
                    owner: "u\(index % 7)"))
        }
        try await sqlite.restore(all, now: start)
        try await memory.restore(all, now: start)
        let stores: [any RegistrationStore] = [sqlite, memory]
        for text in [nil, "news", "news || sports", "username:u3 && news", "!news", "news && !sports"] {
            let expression = try text.map { try TagExpression(parsing: $0) }
            for platforms in [PlatformSelection.all, try PlatformSelection(parsing: "fcm")] {
                var listed: [RegistrationID] = []
                for try await page in sqlite.registrations(
                    matching: expression, platforms: platforms, app: .default, batchSize: 500, now: start)
                {
                    listed += page.map(\.id)
                }
                for store in stores {
                    var paged: [DispatchTarget] = []
                    var pageSizes: [Int] = []
                    for try await page in store.deliveryTargets(
                        matching: expression, platforms: platforms, app: .default, pageSize: 97, now: start)
                    {
                        paged += page
                        pageSizes.append(page.count)
                    }
                    #expect(paged.map(\.registrationID) == listed, "\(text ?? "everyone") on \(platforms), \(type(of: store))")
                    #expect(pageSizes.dropLast().allSatisfy { $0 == 97 })
                    let byID = Dictionary(uniqueKeysWithValues: all.map { ($0.id, $0.handle) })
                    #expect(paged.allSatisfy { byID[$0.registrationID] == $0.handle })
                }
            }
        }
    }
}
