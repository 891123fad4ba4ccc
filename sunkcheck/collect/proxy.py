"""The proxy a request to the API server goes through, chosen from the environment as kubectl (Go's
golang.org/x/net/http/httpproxy) chooses it: HTTPS_PROXY for an https:// server, HTTP_PROXY for http://
(upper case first, then lower); never for `localhost` or a loopback address; not for a host NO_PROXY
names: `*`, an IP address or CIDR block, or a domain (`example.com` and its subdomains, `.example.com`
and `*.example.com` its subdomains only), each optionally with `:port`."""

from __future__ import annotations

import ipaddress
import ssl
import traceback
import urllib.parse
from collections.abc import Mapping

DEFAULT_PORTS = {"https": "443", "http": "80"}
SCHEMES = ("http", "https", "socks5", "socks5h")  # the proxies kubectl's Go transport dials


def problem(url: str) -> str | None:
    """Why `url` is no proxy a request can go through, in words that never quote its password (None: it is one)."""
    import urllib3

    try:
        parts = urllib.parse.urlsplit(url)
        parts.port  # noqa: B018 - parsed on use: a port that is no number, or past 65535, raises here
        urllib3.util.parse_url(url)  # what the connection pool will parse
    except ValueError:  # urllib3's LocationParseError included
        return "not a URL (a host or port that cannot be read)"
    if parts.scheme not in SCHEMES:
        return f"its scheme is not one of {', '.join(s + '://' for s in SCHEMES)}"
    return None if parts.hostname else "it names no host"


TUNNEL_CLOSED = "it answered 200 to CONNECT, then closed the tunnel before the API server's TLS handshake"


def tunnel_closed(error: BaseException) -> bool:
    """Whether a connection through an HTTP proxy ended (EOF or reset) in the TLS handshake, after the proxy's
    answer to CONNECT was read: the tunnel it opened closed before TLS began, its doing (a server that ends a TLS
    connection has answered the handshake first)."""
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, (ssl.SSLEOFError, ConnectionResetError)):
            # raised in ssl's wrap_socket: before or in the handshake, not once TLS was up
            return any(frame.f_code.co_name == "wrap_socket" for frame, _ in traceback.walk_tb(current.__traceback__))
        inner = next((a for a in current.args if isinstance(a, BaseException)), None)
        current = inner or current.__cause__ or current.__context__
    return False


def _env(environ: Mapping[str, str], name: str) -> tuple[str, str] | None:
    """(value, the variable it came from): the first non-empty of NAME and name, as Go's getEnvAny."""
    for variable in (name.upper(), name.lower()):
        if environ.get(variable):
            return environ[variable], variable
    return None


def from_environment(server: str, environ: Mapping[str, str]) -> tuple[str, str] | None:
    """(proxy URL, the variable that set it) for requests to `server`, or None to connect directly."""
    url = urllib.parse.urlsplit(server)
    found = _env(environ, f"{url.scheme}_proxy") if url.scheme in DEFAULT_PORTS else None
    if found is None or not url.hostname:
        return None
    no_proxy = _env(environ, "no_proxy")
    if bypassed(url.hostname, str(url.port or DEFAULT_PORTS[url.scheme]), no_proxy[0] if no_proxy else ""):
        return None
    proxy, variable = found
    return (proxy if "://" in proxy else "http://" + proxy), variable  # Go reads `host:port` as an http:// proxy


def bypassed(host: str, port: str, no_proxy: str) -> bool:
    """Whether a request to host:port goes direct: Go's httpproxy useProxy, negated."""
    host = host.lower().strip("[]")
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        ip = None
    if host == "localhost" or (ip is not None and ip.is_loopback):
        return True
    return any(_matches(entry.strip().lower(), host, port, ip) for entry in no_proxy.split(","))


def _matches(entry: str, host: str, port: str, ip: ipaddress.IPv4Address | ipaddress.IPv6Address | None) -> bool:
    if not entry:
        return False
    if entry == "*":
        return True
    if "/" in entry:  # a CIDR block (a malformed one matches nothing, as in Go)
        try:
            return ip is not None and ip in ipaddress.ip_network(entry, strict=False)
        except ValueError:
            return False
    name, entry_port = _split_port(entry)
    if not name:
        return False
    try:
        entry_ip = ipaddress.ip_address(name)
    except ValueError:
        entry_ip = None
    if entry_ip is not None:
        return entry_ip == ip and entry_port in ("", port)
    subdomains_only = name.startswith(".") or name.startswith("*.")
    domain = "." + name.lstrip("*").lstrip(".")
    return (host.endswith(domain) or (not subdomains_only and host == domain[1:])) and entry_port in ("", port)


def _split_port(entry: str) -> tuple[str, str]:
    """`host:port`, `[v6]:port` -> (host, port); a bare IPv6 address or a name -> (it, "")."""
    if entry.startswith("["):
        name, _, rest = entry[1:].partition("]")
        return name, rest[1:] if rest.startswith(":") else ""
    name, colon, port = entry.rpartition(":")
    if colon and ":" not in name and port.isdigit():
        return name, port
    return entry, ""
