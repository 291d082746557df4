extension BearerdVersion {
    /// The commit this binary was built from, as `git rev-parse --short=12 HEAD` prints it, with
    /// `-dirty` when the tree had changes. `scripts/package` writes it into the copy of the sources
    /// it builds from; a plain `swift build` leaves "unknown".
    package static let commit = "unknown"
}
