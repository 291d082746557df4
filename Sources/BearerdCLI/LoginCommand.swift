import ArgumentParser
import BearerdAdmin
import BearerdTokens
import Foundation
import NIOHTTP1
import Synchronization

/// `bearerd login`: in a browser (the authorization code grant with PKCE), a password (or a JSON
/// API's sign-in), an imported refresh token, or the device grant; through the running daemon.
struct LoginCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "login",
        abstract: "Log in, so that bearerd has a session to keep fresh.",
        discussion: """
            By default logs in in a browser when the token server has an authorization endpoint \
            (auth.authorization_url, or auth.issuer's metadata): the authorization code grant \
            with PKCE (RFC 7636), the browser coming back to a port on 127.0.0.1 (RFC 8252). \
            --no-browser prints the URL instead, for a host without one: open it anywhere and \
            paste back the address the browser ends on, or forward the port. Otherwise, or \
            with --username or --password-stdin, asks for a user name and a password (the \
            password without echo) and sends them once to the token endpoint (the password \
            grant, or auth.json.login_url). --device uses the OAuth 2.0 device grant (RFC 8628): \
            it prints a URL and a code to enter in a browser anywhere. --refresh-token-stdin \
            imports a refresh token obtained elsewhere. The login goes through the running \
            daemon; with no daemon, it is written to the store directly.
            """
    )

    @OptionGroup var options: ConfigOption
    @OptionGroup var session: SessionOption
    @Option(help: "The user name (asked for when missing).") var username: String?
    @Flag(help: "Read the password from the first line of standard input.") var passwordStdin = false
    @Flag(help: "Read a refresh token from the first line of standard input and import it.")
    var refreshTokenStdin = false
    @Flag(help: "Log in with the device grant (RFC 8628): approve in a browser elsewhere.") var device = false
    @Flag(help: "Log in in a browser (the default when the token server offers it).") var browser = false
    @Flag(help: "Log in in a browser elsewhere: print the URL, and paste back where it ends.") var noBrowser = false

    func validate() throws {
        let ways = [
            self.passwordStdin || self.username != nil, self.refreshTokenStdin, self.device,
            self.browser || self.noBrowser,
        ]
        if ways.filter({ $0 }).count > 1 {
            throw ValidationError(
                "choose one of a browser login, a password login, --refresh-token-stdin and --device"
            )
        }
        if self.browser && self.noBrowser { throw ValidationError("choose --browser or --no-browser") }
    }

    func run() async throws {
        try await SessionCommand.run(self.options, session: self.session.session) { channel, configuration in
            if self.device {
                try await Self.device(channel)
                return
            }
            let passwordAsked = self.passwordStdin || self.username != nil
            if !passwordAsked && !self.refreshTokenStdin {
                let login = BrowserLogin(
                    channel: channel,
                    configuration: configuration,
                    mode: self.noBrowser ? .printOnly : .openBrowser,
                    environment: ProcessInfo.processInfo.environment
                )
                do {
                    let status = try await login.run()
                    print("logged in" + Self.summary(status))
                    return
                } catch let unavailable as BrowserLogin.Unavailable {
                    // Asked for by name: say why not. Otherwise a password login is the other way.
                    if self.browser || self.noBrowser { throw CommandError(unavailable.message) }
                }
            }
            let login: AdminMessages.Login
            if self.refreshTokenStdin {
                let token = try Terminal.firstLineOfStandardInput(what: "refresh token")
                login = AdminMessages.Login(method: .refreshToken, refreshToken: token)
            } else {
                let username = try self.username ?? Terminal.ask("User name: ", secret: false)
                let password =
                    try self.passwordStdin
                    ? Terminal.firstLineOfStandardInput(what: "password") : Terminal.ask("Password: ", secret: true)
                guard !username.isEmpty, !password.isEmpty else {
                    throw CommandError("a user name and a password are needed")
                }
                login = AdminMessages.Login(method: .password, username: username, password: password)
            }
            let status = try await channel.request(.POST, "/v1/login", body: login, as: TokenStatus.self)
            print("logged in" + Self.summary(status))
        }
    }

    private static func device(_ channel: any AdminChannel) async throws {
        let outcome = Mutex<Result<TokenStatus, AdminMessages.Failure>?>(nil)
        try await channel.deviceLogin { line in
            guard let event = try? TokenStatus.decoder().decode(AdminMessages.DeviceEvent.self, from: line) else {
                return
            }
            if let prompt = event.prompt {
                var text =
                    "To log in, open \(PrintableText.of(prompt.verificationURI)) in a browser and enter the code \(PrintableText.of(prompt.userCode))"
                if let complete = prompt.verificationURIComplete { text += "\n(or open \(PrintableText.of(complete)))" }
                text += "\nThe code expires in \(StatusText.span(prompt.expiresIn)). Waiting…"
                StandardError.emit(text)
            }
            if let status = event.status { outcome.withLock { $0 = .success(status) } }
            if let failure = event.failure { outcome.withLock { $0 = .failure(failure) } }
        }
        switch outcome.withLock({ $0 }) {
        case .success(let status): print("logged in" + Self.summary(status))
        case .failure(let failure): throw CommandError(failure.message)
        case nil: throw CommandError("the daemon ended the device login without an answer; see its log")
        }
    }

    static func summary(_ status: TokenStatus) -> String {
        var parts: [String] = []
        if let subject = status.subject { parts.append("as \(PrintableText.of(subject))") }
        if let expiresAt = status.expiresAt {
            parts.append("token valid for \(StatusText.span(max(0, Int(expiresAt.timeIntervalSince(status.now)))))")
        }
        return parts.isEmpty ? "" : " (" + parts.joined(separator: ", ") + ")"
    }
}
