#!/usr/bin/env python3
"""A scripted browser for bearerd's browser-login tests: given as $BROWSER, it is what
`bearerd login` opens. It follows the authorization URL with a cookie jar, fills and submits each
page's first form (a login page's username and password, a consent page's "allow"), and follows
the redirect back to the CLI's loopback listener, as a person's browser would.

  browser.py [--user U] [--password P] [--deny] [--state-tamper] [--twice] [--print-redirect]
             [--log FILE] URL

--deny: press the consent page's other button (the server redirects with error=access_denied).
--state-tamper: change the state of the redirect to the loopback listener.
--twice: after the redirect, deliver it again (a second redirect).
--print-redirect: print the address of the redirect to the loopback listener on standard output
instead of going there (what a person copies from a browser on another machine).
--log: append each step (URL path and status, no query) to FILE.
Standard library only."""
import argparse
import html.parser
import sys
import urllib.error
import urllib.parse
import urllib.request
from http.cookiejar import CookieJar


class Printed(Exception):
    pass


class Forms(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.forms = []
        self.current = None

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "form":
            self.current = {"action": attrs.get("action") or "", "fields": [], "submits": []}
            self.forms.append(self.current)
        elif tag == "input" and self.current is not None:
            kind = (attrs.get("type") or "text").lower()
            name = attrs.get("name")
            if kind == "submit":
                self.current["submits"].append((name, attrs.get("value") or ""))
            elif name:
                self.current["fields"].append((name, attrs.get("value") or "", kind))

    def handle_endtag(self, tag):
        if tag == "form":
            self.current = None


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--user", default="alice")
    parser.add_argument("--password", default="alice-pass")
    parser.add_argument("--deny", action="store_true")
    parser.add_argument("--state-tamper", action="store_true")
    parser.add_argument("--twice", action="store_true")
    parser.add_argument("--print-redirect", action="store_true")
    parser.add_argument("--log")
    parser.add_argument("url")
    args = parser.parse_args()
    log = open(args.log, "a") if args.log else None

    def note(text):
        if log:
            log.write(text + "\n")
            log.flush()

    delivered = []

    class Redirects(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, req, fp, code, msg, headers, newurl):
            target = urllib.parse.urlsplit(newurl)
            if target.hostname in ("127.0.0.1", "::1") and target.path == "/callback":
                query = urllib.parse.parse_qsl(target.query, keep_blank_values=True)
                if args.state_tamper:
                    query = [(k, v + "x" if k == "state" else v) for k, v in query]
                newurl = urllib.parse.urlunsplit(target._replace(query=urllib.parse.urlencode(query)))
                delivered.append(newurl)
                note("redirect to the loopback listener: " + ",".join(sorted(k for k, _ in query)))
                if args.print_redirect:
                    print(newurl, flush=True)
                    raise Printed()
            return super().redirect_request(req, fp, code, msg, headers, newurl)

    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(CookieJar()), Redirects())
    url, data = args.url, None
    for _ in range(8):
        try:
            response = opener.open(url, data=data, timeout=30)
            status, body, final = response.status, response.read().decode("utf-8", "replace"), response.geturl()
        except urllib.error.HTTPError as error:
            status, body, final = error.code, error.read().decode("utf-8", "replace"), error.geturl()
        except Printed:
            return 0
        path = urllib.parse.urlsplit(final).path
        note("%s %s" % (status, path))
        if delivered and path == "/callback":
            note("page: " + " ".join(body.split())[:300])
            if args.twice:
                note("again: " + urllib.parse.urlsplit(delivered[-1]).netloc)
                try:
                    again = opener.open(delivered[-1], timeout=30)
                    note("again %s" % again.status)
                except urllib.error.HTTPError as error:
                    note("again %s" % error.code)
                except (urllib.error.URLError, ConnectionError):
                    # Nothing listens any more, or the listener closed as it connected.
                    note("again refused")
                except Exception as error:  # noqa: BLE001 - for whoever reads the log
                    note("again failed: %r" % error)
            return 0
        forms = Forms()
        forms.feed(body)
        if not forms.forms:
            note("no form on %s: %s" % (path, " ".join(body.split())[:300]))
            return 1
        form = forms.forms[0]
        fields = []
        for name, value, kind in form["fields"]:
            if name == "username":
                value = args.user
            elif name == "password":
                value = args.password
            fields.append((name, value))
        for name, value in form["submits"]:
            if name == "allow" and not args.deny:
                fields.append((name, value))
        url = urllib.parse.urljoin(final, form["action"]) if form["action"] else final
        data = urllib.parse.urlencode(fields).encode()
    note("too many steps")
    return 1


if __name__ == "__main__":
    sys.exit(main())
