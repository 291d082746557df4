/// Request headers that upstreams, their frameworks or the load balancers in front of them read
/// instead of the request's own method, path, host, port, scheme or client address. A caller
/// that sets one can undo `proxy.allow_methods`/`deny_paths` or pose as someone else, so bearerd
/// removes every one of them unless `proxy.pass_override_headers`. One list, each with who reads
/// it; the data path's matcher and the key's documentation are made from it.
///
/// `X-Forwarded-For`, `-Proto`, `-Host` and `Forwarded` are not here: bearerd writes them itself
/// (`proxy.forwarded_headers`), replacing what a client sent.
package enum OverrideHeaders {
    /// The names as clients usually write them (compared in any case), and who reads them.
    package static let all: [(name: String, readBy: String)] = [
        // The method.
        (
            "X-HTTP-Method-Override",
            "Google APIs, Express method-override, Laravel, Spring's HiddenHttpMethodFilter setups"
        ),
        ("X-HTTP-Method", "OData, ASP.NET"),
        ("X-Method-Override", "IBM gateways, Symfony"),
        ("X-Original-Method", "nginx auth_request"),
        // The path or URL.
        ("X-Original-URL", "IIS URL Rewrite, Symfony, Drupal"),
        ("X-Original-URI", "nginx, ingress-nginx"),
        ("X-Rewrite-URL", "IIS, Symfony, Zend"),
        ("X-Forwarded-Prefix", "Spring, Traefik, Werkzeug ProxyFix"),
        ("X-Forwarded-Path", "Kong"),
        ("X-Forwarded-URI", "Traefik"),
        ("X-Envoy-Original-Path", "Envoy"),
        ("X-Script-Name", "WSGI prefix middleware"),
        // The host, port and scheme.
        ("X-Forwarded-Server", "Apache mod_proxy, Spring"),
        ("X-Forwarded-Port", "Spring, Werkzeug ProxyFix, AWS load balancers"),
        ("X-Forwarded-Scheme", "nginx, Rails"),
        ("X-Forwarded-SSL", "Rails, Rack"),
        ("X-Forwarded-Protocol", "Rack"),
        ("X-Url-Scheme", "Rack, Django setups"),
        ("Front-End-Https", "Microsoft, Rack"),
        ("X-Host", "Rack, some gateways"),
        ("X-Original-Host", "Azure Application Gateway, Front Door"),
        // The client's address.
        ("X-Real-IP", "nginx realip, many frameworks"),
        ("X-Client-IP", "Express, Spring, various"),
        ("True-Client-IP", "Akamai, Cloudflare Enterprise"),
        ("CF-Connecting-IP", "Cloudflare"),
        ("Fastly-Client-IP", "Fastly"),
        ("X-Cluster-Client-IP", "Rackspace, Riverbed"),
        ("X-Original-Forwarded-For", "ingress-nginx"),
        ("X-Envoy-External-Address", "Envoy"),
        ("X-ProxyUser-Ip", "Google"),
        ("X-Forwarded", "older proxies"),
        ("Forwarded-For", "older proxies"),
        ("Client-IP", "various"),
    ]

    /// The names, as the documentation lists them: wrapped like the other keys' text.
    package static var listed: String {
        var lines: [String] = []
        var line = ""
        for name in Self.all.map({ $0.name + "," }) {
            if !line.isEmpty && line.count + 1 + name.count > 96 {
                lines.append(line)
                line = ""
            }
            line += line.isEmpty ? name : " " + name
        }
        lines.append(String(line.dropLast()))
        return lines.joined(separator: "\n")
    }
}
