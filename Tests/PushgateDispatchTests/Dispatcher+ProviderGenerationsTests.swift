import PushgateDispatch
import Testing

/// The bookkeeping of a dispatcher's provider generations, without providers: each step's answer
/// says which providers to shut down and whom to resume.
@Suite struct ProviderGenerationsStateTests {
    typealias Generations = Dispatcher.ProviderGenerations<String, Int>

    @Test func aReplacementNobodyHoldsIsShutDownByTheReplacement() {
        var generations = Generations("first")
        let delivery = generations.lease()
        #expect(delivery == ("first", 0))
        #expect(generations.release(delivery.generation) == .none, "the current providers stay")
        #expect(generations.replace(with: "second") == .shutDown("first", generation: 0))
        #expect(generations.current == "second" && generations.generation == 1)
        #expect(generations.heldReplacedGenerations == 0)
        #expect(generations.waitForClosings(7) == .wait, "the first providers are being shut down")
        #expect(generations.closed(0) == [7])
        #expect(generations.waitForClosings(8) == .resume(8))
    }

    @Test func aHeldGenerationIsShutDownByItsLastHolderHoweverManyReplacementsCame() {
        var generations = Generations("first")
        let (one, two) = (generations.lease(), generations.lease())
        #expect(generations.replace(with: "second") == .none)
        #expect(generations.holders(of: 0) == 2 && generations.heldReplacedGenerations == 1)
        // The generations in between, which nobody holds, go at once.
        #expect(generations.replace(with: "third") == .shutDown("second", generation: 1))
        #expect(generations.closed(1) == [])
        let later = generations.lease()
        #expect(later == ("third", 2))
        #expect(generations.replace(with: "fourth") == .none)
        #expect(generations.heldReplacedGenerations == 2)

        #expect(generations.release(one.generation) == .none, "another delivery still holds the first providers")
        #expect(generations.holders(of: 0) == 1)
        #expect(generations.release(two.generation) == .shutDown("first", generation: 0))
        #expect(generations.holders(of: 0) == 0 && generations.heldReplacedGenerations == 1)
        #expect(generations.release(two.generation) == .none, "shut down once")
        #expect(generations.release(later.generation) == .shutDown("third", generation: 2))
        #expect(generations.heldReplacedGenerations == 0)
        #expect(generations.closed(0) == [] && generations.closed(2) == [])
        #expect(generations.current == "fourth" && generations.holders(of: 3) == 0)
    }

    @Test func theShutdownClosesWhatIsHeldOnceAndWaitsForWhatOthersAreClosing() {
        var generations = Generations("first")
        let held = generations.lease()
        #expect(generations.replace(with: "second") == .none)
        let closing = generations.lease()
        #expect(generations.replace(with: "third") == .none)
        #expect(generations.release(closing.generation) == .shutDown("second", generation: 1))

        // The current providers and the held ones; not those being shut down by their last holder.
        #expect(generations.shutdown().sorted() == ["first", "third"])
        #expect(generations.shutdown() == [], "a second shutdown closes nothing")
        #expect(generations.waitForClosings(1) == .wait)
        #expect(generations.waitForClosings(2) == .wait)
        #expect(generations.release(held.generation) == .none, "shut down with the dispatcher")
        #expect(generations.closed(1) == [1, 2])

        // Deliveries may still start (with providers that answer as shut down); a replacement is
        // shut down at once and never becomes current.
        let late = generations.lease()
        #expect(generations.replace(with: "fourth") == .shutDown("fourth", generation: nil))
        #expect(generations.current == "third")
        #expect(generations.release(late.generation) == .none)
        #expect(generations.waitForClosings(3) == .resume(3))
    }
}
