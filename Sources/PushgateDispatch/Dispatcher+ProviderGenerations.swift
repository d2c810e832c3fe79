extension Dispatcher {
    /// The dispatcher's providers by generation, as a value: which providers deliveries start with,
    /// which replaced ones deliveries still hold, and which are being shut down. Each step says what
    /// to do (which providers to shut down, whom to resume); the dispatcher does it.
    ///
    /// A generation is the providers between two replacements. A delivery holds the generation it
    /// started with until it ends; a replaced generation is shut down by whoever lets go of it
    /// last: the replacement when no delivery holds it, else the last delivery that does, however
    /// many replacements came meanwhile. The dispatcher's shutdown closes the current and the held
    /// generations itself and waits for those others are shutting down.
    ///
    /// Generic over the providers (and the waiters of a shutdown) so that it is tested without any.
    package struct ProviderGenerations<Providers, Waiter> {
        /// A replaced generation.
        package enum Replaced {
            /// Held by `holders` (one or more) deliveries that started with it.
            case held(Providers, holders: Int)
            /// No delivery holds it any more: its providers are being shut down by the one that
            /// let go of it last, which reports ``ProviderGenerations/closed(_:)`` when done.
            case closing
        }

        package enum State {
            case running
            /// Every provider the dispatcher had is shut down or being shut down; a replacement
            /// is shut down at once.
            case shutDown
        }

        /// What to do after a step.
        package enum Action {
            case none
            /// Shut these providers down, then report ``ProviderGenerations/closed(_:)`` with `generation`
            /// (nil: a replacement that arrived after the shutdown, which never was a generation).
            case shutDown(Providers, generation: Int?)
        }

        package enum Wait {
            /// Nothing is being shut down: go on.
            case resume(Waiter)
            /// Kept; resumed by the ``ProviderGenerations/closed(_:)`` that ends the last closing.
            case wait
        }

        /// The providers deliveries start with now.
        package private(set) var current: Providers
        /// The current generation (0: the first providers).
        package private(set) var generation = 0
        /// Deliveries holding the current generation.
        private var holders = 0
        private var replaced: [Int: Replaced] = [:]
        private var state = State.running
        private var waiters: [Waiter] = []

        package init(_ providers: Providers) { current = providers }

        /// A delivery starts: it holds the current providers until it reports ``release(_:)`` with
        /// their generation.
        package mutating func lease() -> (providers: Providers, generation: Int) {
            holders += 1
            return (current, generation)
        }

        /// A delivery that started with `generation` ended: when it was the last to hold a
        /// replaced generation, its providers are to be shut down (by the caller).
        package mutating func release(_ generation: Int) -> Action {
            if generation == self.generation {
                precondition(holders > 0, "a generation released more often than leased")
                holders -= 1
                return .none
            }
            switch replaced[generation] {
            case .held(let providers, let count) where count > 1:
                replaced[generation] = .held(providers, holders: count - 1)
                return .none
            case .held(let providers, _):
                replaced[generation] = .closing
                return .shutDown(providers, generation: generation)
            case .closing, nil:
                // Shut down with the dispatcher while it was held: nothing is left to do.
                return .none
            }
        }

        /// Deliveries start with `providers` from now on. The replaced generation is to be shut
        /// down at once when no delivery holds it; after the shutdown, `providers` are.
        package mutating func replace(with providers: Providers) -> Action {
            guard case .running = state else { return .shutDown(providers, generation: nil) }
            let old = generation
            let action: Action
            if holders == 0 {
                replaced[old] = .closing
                action = .shutDown(current, generation: old)
            } else {
                replaced[old] = .held(current, holders: holders)
                action = .none
            }
            current = providers
            generation += 1
            holders = 0
            return action
        }

        /// The providers of `generation` are shut down (nil: a replacement after the shutdown).
        /// Answers the waiters to resume: all of them once nothing is being shut down.
        package mutating func closed(_ generation: Int?) -> [Waiter] {
            if let generation { replaced[generation] = nil }
            guard !isClosing else { return [] }
            defer { waiters = [] }
            return waiters
        }

        /// The dispatcher shuts down: answers the providers to shut down now, the current ones and
        /// the replaced ones still held, once (a second shutdown closes nothing). Deliveries that
        /// still hold a generation close nothing when they end. The generations others are
        /// shutting down are waited for with ``waitForClosings(_:)``.
        package mutating func shutdown() -> [Providers] {
            guard case .running = state else { return [] }
            state = .shutDown
            var providers = [current]
            for (generation, entry) in replaced {
                guard case .held(let held, _) = entry else { continue }
                providers.append(held)
                replaced[generation] = nil
            }
            return providers
        }

        /// `waiter` waits for every generation being shut down.
        package mutating func waitForClosings(_ waiter: Waiter) -> Wait {
            guard isClosing else { return .resume(waiter) }
            waiters.append(waiter)
            return .wait
        }

        /// Deliveries holding `generation`.
        package func holders(of generation: Int) -> Int {
            if generation == self.generation { return holders }
            guard case .held(_, let holders) = replaced[generation] else { return 0 }
            return holders
        }

        /// Replaced generations a delivery still holds.
        package var heldReplacedGenerations: Int {
            replaced.values.count {
                if case .held = $0 { return true }
                return false
            }
        }

        private var isClosing: Bool {
            replaced.values.contains {
                if case .closing = $0 { return true }
                return false
            }
        }
    }
}

extension Dispatcher.ProviderGenerations.Action: Equatable where Providers: Equatable {}
extension Dispatcher.ProviderGenerations.Wait: Equatable where Waiter: Equatable {}
