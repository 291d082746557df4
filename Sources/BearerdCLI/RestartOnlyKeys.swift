import BearerdConfig

/// The settings a reload does not apply to a running daemon: the token source and the store
/// (the stored tokens were issued by one token server to one client; swapping either under a
/// running engine would send them where they mean nothing), and what is made once at start
/// (the event loops, the admin and metrics listeners, the shutdown's grace). Which keys they
/// are is each key's descriptor's to say (``ConfigSchema/Reload``); a reload names each that
/// changed, so none is silently ignored, and a new key needs nothing here.
enum RestartOnlyKeys {
    /// Keys whose change makes the stored tokens useless (another server, client or store).
    static let session = Set(ConfigSchema.keys(reloading: .newSession))

    /// What a token is for, besides where it comes from (``session``): keys that change the
    /// token a reload keeps serving into one meant for another API. A reload that moves
    /// `upstream.url` while one of these (or of ``session``) waits for a restart is refused for
    /// that session; the connection's keys (timeouts, TLS files, a secret file's path) are not.
    static let tokenPurpose: Set<String> = [
        "auth.resource", "auth.scopes", "auth.extra_params", "auth.authorization_params",
        "auth.token_exchange.audience", "auth.token_exchange.resource",
        "auth.token_exchange.requested_token_type", "auth.verify.audience", "auth.verify.issuer",
        "auth.client_assertion_audience",
    ]

    /// Keys a reload does not apply.
    static let all = ConfigSchema.keys(reloading: .restart) + ConfigSchema.keys(reloading: .newSession)

    /// The keys a reload does not apply whose written values differ, sorted.
    static func changed(from old: WrittenValues, to new: WrittenValues) -> [String] {
        Self.all.filter { old[$0] != new[$0] }.sorted()
    }

    static func changed(from old: BearerdConfiguration, to new: BearerdConfiguration) -> [String] {
        Self.changed(from: old.written, to: new.written)
    }

    /// `new`'s written values, with `old`'s for the keys a reload does not apply: what runs.
    static func running(_ new: WrittenValues, keeping old: WrittenValues) -> WrittenValues {
        var running = new
        for key in Self.all { running[key] = old[key] }
        return running
    }
}
