extension PushgateConfiguration {
    /// What loads but should change, one sentence each naming its key: `pushgate serve` logs these
    /// at start and after each reload, `pushgate templates check` prints them.
    public var warnings: [String] {
        auth.users.enumerated().compactMap { index, user in
            guard let hash = try? PBKDF2PasswordHash(parsing: user.passwordHash),
                hash.iterations < PBKDF2PasswordHash.recommendedIterations
            else { return nil }
            return "$.auth.users[\(index)].passwordHash: user '\(user.name)' has a hash of \(hash.iterations) iterations, "
                + "fewer than the \(PBKDF2PasswordHash.recommendedIterations) new hashes use; make a new one with `pushgate users hash`"
        }
    }
}
