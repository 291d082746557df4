/// The private key DPoP-bound tokens are bound to (RFC 9449), kept sealed in the store with the
/// tokens it goes with: a restart, and every host of a fleet, signs with the same key.
package protocol ProofKey: Sendable {
    /// The key as the store keeps it (a secret: it never reaches a log or `status`).
    func exported() -> Secret
    /// Takes the key found in the store or the fleet's row; `false` when it cannot be read.
    func adopt(_ stored: Secret) -> Bool
}
