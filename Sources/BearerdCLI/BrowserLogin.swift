import BearerdAdmin
import BearerdConfig
import BearerdTokens
import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import Synchronization

/// `bearerd login` in a browser (RFC 8252): listens on a loopback port, has the daemon begin the
/// login (it keeps the PKCE verifier), opens the browser or prints the URL, and hands the
/// redirect's code back to the daemon, which redeems it. The tokens never pass through here.
struct BrowserLogin {
    enum Mode {
        /// Opens the browser (`$BROWSER`, `xdg-open`) and prints the URL too.
        case openBrowser
        /// `--no-browser`: prints the URL; the redirect comes to the listener (a forwarded port)
        /// or is pasted on standard input.
        case printOnly
    }

    /// Why the login could not begin, when the caller may log in another way.
    struct Unavailable: Error {
        var message: String
    }

    let channel: any AdminChannel
    let configuration: BearerdConfiguration
    let mode: Mode
    let environment: [String: String]

    /// Logs in and returns the daemon's status; throws ``Unavailable`` when the daemon has no
    /// browser login (no authorization endpoint), a ``CommandError`` for any other failure.
    func run() async throws -> TokenStatus {
        let settings = self.configuration.auth.oauth2?.authorization ?? .init()
        let listener = try await LoopbackRedirect.listen(
            port: settings.redirectPort,
            group: MultiThreadedEventLoopGroup.singleton
        )
        do {
            let status = try await self.run(listener, timeout: settings.timeout)
            await listener.close()
            return status
        } catch {
            await listener.close()
            throw error
        }
    }

    private func run(_ listener: LoopbackRedirect, timeout: Duration) async throws -> TokenStatus {
        let prompt: AuthorizationPrompt
        do {
            prompt = try await self.channel.request(
                .POST,
                "/v1/login/authorize",
                body: AdminMessages.Authorize(redirectURI: listener.redirectURI),
                as: AuthorizationPrompt.self
            )
        } catch let failure as AdminMessages.Failure where failure.error == "no_browser_login" {
            throw Unavailable(message: failure.message)
        }
        listener.expect(state: prompt.state, authorizationURL: prompt.authorizationURL)
        let url = PrintableText.of(prompt.authorizationURL)
        let wait = StatusText.span(Int(timeout.components.seconds))
        switch self.mode {
        case .openBrowser:
            StandardError.emit("Opening a browser to log in. If none opens, open this URL:\n\n    \(url)\n")
            // The browser gets the listener's one-time start address: a program's arguments are
            // visible to every local user, and the authorization URL's state must not be.
            if let problem = BrowserLauncher.open(listener.startURL, environment: self.environment) {
                StandardError.emit("(no browser could be started: \(PrintableText.of(problem)))")
            }
            StandardError.emit("Waiting for the browser (at most \(wait))…")
        case .printOnly:
            StandardError.emit(
                """
                Open this URL in a browser, on any machine:

                    \(url)

                Then paste here the address the browser ends on (it starts with \(listener.redirectURI)),
                or forward the port first (ssh -L \(listener.port):127.0.0.1:\(listener.port) this-host).
                Waiting (at most \(wait))…
                """
            )
        }
        let answer: Answer
        switch await self.answer(listener, timeout: timeout) {
        case .answer(let parameters, let arrival): answer = (parameters, arrival)
        case .openedTwice:
            throw CommandError(
                "the login's start address was opened twice, so someone else on this host may be trying to take the login: it was stopped and nothing was stored; run `bearerd login --no-browser` and open the URL yourself"
            )
        case .ended, .timedOut:
            let refused = listener.refusedCount
            let forged =
                refused == 0
                ? ""
                : "; \(refused) redirect\(refused == 1 ? "" : "s") with another state than this login's came and \(refused == 1 ? "was" : "were") refused (the redirect's state is not this login's: a stale or forged one)"
            throw CommandError(
                "no answer from the browser within \(wait) (auth.login_timeout)\(forged): nothing was stored; run `bearerd login` again"
            )
        }
        do {
            let status = try await self.finish(answer.parameters, prompt: prompt)
            await answer.arrival?.show(
                RedirectPage(
                    title: "Logged in",
                    message: "bearerd is logged in and keeps the session fresh. You can close this tab.",
                    worked: true
                )
            )
            return status
        } catch {
            // Whatever went wrong, the browser is told, and not left waiting.
            let message = (error as? CommandError)?.message ?? "\(error)"
            let sentence = message.hasSuffix(".") ? message : message + "."
            await answer.arrival?.show(RedirectPage(title: "Login failed", message: sentence + " Close this tab."))
            throw error
        }
    }

    /// A redirect's parameters, and where they came from (`nil`: pasted).
    typealias Answer = (parameters: [String: String], arrival: LoopbackRedirect.Arrival?)

    private enum Wait: Sendable {
        case answer([String: String], LoopbackRedirect.Arrival?)
        /// One way of answering ended without an answer (standard input closed).
        case ended
        case timedOut
        /// The start address was opened a second time: the login is stopped.
        case openedTwice
    }

    /// The redirect's parameters, from the listener or (with `--no-browser`) pasted, or why
    /// there are none.
    private func answer(_ listener: LoopbackRedirect, timeout: Duration) async -> Wait {
        let pasted = self.mode == .printOnly ? Self.pastedLines() : nil
        return await withTaskGroup(of: Wait.self) { group in
            group.addTask {
                for await event in listener.seen {
                    switch event {
                    case .arrival(let arrival): return .answer(arrival.parameters, arrival)
                    case .openedTwice: return .openedTwice
                    }
                }
                return .ended
            }
            if let pasted {
                group.addTask {
                    for await line in pasted {
                        let text = line.trimmingCharacters(in: .whitespaces)
                        guard let mark = text.firstIndex(of: "?"),
                            let parameters = LoopbackRedirect.parameters(query: text[text.index(after: mark)...]),
                            parameters["code"] != nil || parameters["error"] != nil
                        else {
                            StandardError.emit(
                                "That is not the address of the redirect (it has no code): paste it whole"
                            )
                            continue
                        }
                        return .answer(parameters, nil)
                    }
                    return .ended
                }
            }
            group.addTask {
                try? await Task.sleep(for: timeout)
                return .timedOut
            }
            var result = Wait.timedOut
            waiting: for await wait in group {
                switch wait {
                case .answer, .openedTwice, .timedOut:
                    result = wait
                    break waiting
                case .ended: continue
                }
            }
            group.cancelAll()
            return result
        }
    }

    /// Checks the redirect and has the daemon redeem its code.
    private func finish(_ parameters: [String: String], prompt: AuthorizationPrompt) async throws -> TokenStatus {
        // The state first: a redirect that is not this login's says nothing about it.
        guard let state = parameters["state"] else {
            throw CommandError("the redirect has no state: nothing was stored; run `bearerd login` again")
        }
        if !PKCE.sameText(state, prompt.state) {
            throw CommandError(
                "the redirect's state is not this login's (a stale or forged redirect): nothing was stored; run `bearerd login` again"
            )
        }
        if let error = parameters["error"] {
            let description =
                parameters["error_description"].map { ": " + PrintableText.of(String($0.prefix(300))) } ?? ""
            let what: String =
                switch error {
                case "access_denied": "the login was refused at the server (access_denied)"
                case "consent_required", "login_required", "interaction_required":
                    "the server needs the person to log in or consent (\(error))"
                case "invalid_scope": "the server refused the scopes asked for (invalid_scope): check auth.scopes"
                case "unauthorized_client":
                    "this client may not use the browser login (unauthorized_client): check auth.client_id and the client's grant types at the server"
                case "invalid_request":
                    "the server refused the authorization request (invalid_request): check auth.client_id, the redirect URI it registers (http://127.0.0.1/callback) and auth.authorization_params"
                default: "the server ended the login with \(PrintableText.of(String(error.prefix(64))))"
                }
            throw CommandError("\(what)\(description); nothing was stored")
        }
        guard let code = parameters["code"], !code.isEmpty else {
            throw CommandError("the redirect has no code: nothing was stored; run `bearerd login` again")
        }
        do {
            return try await self.channel.request(
                .POST,
                "/v1/login",
                body: AdminMessages.Login(
                    method: .authorizationCode,
                    code: code,
                    state: prompt.state,
                    issuer: parameters["iss"]
                ),
                as: TokenStatus.self
            )
        } catch let failure as AdminMessages.Failure {
            throw CommandError(failure.message)
        }
    }

    /// Standard input's lines, read on a thread of their own (a read cannot be cancelled).
    private static func pastedLines() -> AsyncStream<String> {
        AsyncStream { continuation in
            let thread = Thread {
                while let line = readLine(strippingNewline: true) { continuation.yield(line) }
                continuation.finish()
            }
            thread.start()
        }
    }
}
