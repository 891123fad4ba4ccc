"""TLS and proxies as kubectl has them: a CA with insecure-skip-tls-verify is refused, insecure mode says so
once, and the environment's proxy is chosen by Go's rules (never for loopback, NO_PROXY honoured), its failure
blamed on it. Proxies are tests.kubeapi.ConnectProxy, on loopback."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import threading

import pytest

from sunkcheck.collect.proxy import bypassed, from_environment
from tests.conftest import ROOT, TOKEN, run
from tests.kubeapi import PROXIED_NAME, ConnectProxy, kubeconfig

PROXY_VARIABLES = ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "NO_PROXY", "no_proxy", "ALL_PROXY",
                   "all_proxy")


@pytest.fixture(autouse=True)
def no_proxy_settings(monkeypatch):
    for name in PROXY_VARIABLES:
        monkeypatch.delenv(name, raising=False)


def insecure_kubeconfig(path, server: str, ca: str | None = None):
    doc = json.loads(kubeconfig(path, server, token=TOKEN, ca=ca).read_text())
    doc["clusters"][0]["cluster"]["insecure-skip-tls-verify"] = True
    path.write_text(json.dumps(doc))
    return path


# --- TLS -----------------------------------------------------------------------------------------

def test_a_ca_with_insecure_skip_tls_verify_is_refused_in_kubectls_words(serve, tmp_path, cert):
    """Today's main connected without verifying anything."""
    api = serve("healthy-pool-name")
    config = insecure_kubeconfig(tmp_path / "kc", api.url, ca=cert[0])
    r = run("check", "--kubeconfig", str(config))
    assert r.code == 3 and r.err == (f"sunkcheck: error: kubeconfig {config}: context test: specifying a root "
                                     "certificates file with the insecure flag is not allowed\n")
    assert api.log == []
    kubectl = subprocess.run(["kubectl", "--kubeconfig", str(config), "get", "nodes"], capture_output=True, text=True,
                             timeout=60)
    assert kubectl.returncode == 1
    assert kubectl.stderr == "error: specifying a root certificates file with the insecure flag is not allowed\n"


def test_insecure_mode_is_one_warning_line_not_one_per_request(serve, tmp_path):
    api = serve("healthy-pool-name")
    config = insecure_kubeconfig(tmp_path / "kc", api.url)
    r = subprocess.run([sys.executable, "-m", "sunkcheck", "check", "--kubeconfig", str(config)], capture_output=True,
                       text=True, timeout=120, cwd=ROOT, env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert r.returncode == 0 and len(api.log) > 3
    assert r.stderr == (f"sunkcheck: warning: {api.url}: the API server's certificate is not verified "
                        "(insecure-skip-tls-verify)\n")


# --- proxies -------------------------------------------------------------------------------------

def proxied_server(api, tmp_path, cert):
    """A kubeconfig naming `api` by PROXIED_NAME, which only the test proxy resolves: not loopback to the client."""
    server = api.url.replace("127.0.0.1", PROXIED_NAME)
    return server, kubeconfig(tmp_path / "kc-proxied", server, token=TOKEN, ca=cert[0])


@pytest.mark.parametrize("variable", ["HTTPS_PROXY", "https_proxy"])
def test_the_environments_proxy_is_not_used_for_a_loopback_server(serve, monkeypatch, variable):
    api = serve("healthy-pool-name")
    with ConnectProxy(refuse="403 Forbidden") as proxy:
        monkeypatch.setenv(variable, proxy.url)
        r = run("check")
    assert (r.code, r.err, proxy.log) == (0, "", []) and api.log


@pytest.mark.parametrize("variable", ["HTTPS_PROXY", "https_proxy"])
def test_the_environments_proxy_carries_requests_to_another_host(serve, monkeypatch, tmp_path, cert, variable):
    api = serve("healthy-pool-name")
    server, config = proxied_server(api, tmp_path, cert)
    with ConnectProxy() as proxy:
        monkeypatch.setenv(variable, proxy.url.removeprefix("http://"))  # `host:port` is an http:// proxy, as in Go
        monkeypatch.setenv("NO_PROXY", f"other.test,10.0.0.0/8,{PROXIED_NAME}:1")
        r = run("check", "--kubeconfig", str(config))
    assert (r.code, r.err) == (0, "") and api.log
    assert proxy.log and set(proxy.log) == {server.removeprefix("https://")}


@pytest.mark.parametrize("no_proxy", [PROXIED_NAME, ".test", "*.test", "test", "*", f" x.example , {PROXIED_NAME} "])
def test_no_proxy_sends_requests_direct(serve, monkeypatch, tmp_path, cert, no_proxy):
    """Direct, PROXIED_NAME resolves nowhere: that the run fails to resolve it shows the proxy was not used."""
    api = serve("healthy-pool-name")
    server, config = proxied_server(api, tmp_path, cert)
    with ConnectProxy() as proxy:
        monkeypatch.setenv("HTTPS_PROXY", proxy.url)
        monkeypatch.setenv("no_proxy", no_proxy)
        r = run("check", "--kubeconfig", str(config))
    assert r.code == 3 and proxy.log == [] and api.log == []
    assert r.err.startswith(f"sunkcheck: error: cannot reach the API server {server}: "), r.err


@pytest.mark.parametrize("no_proxy", ["", ".test", "*.test", "test", f"{PROXIED_NAME}:1", "{server}", "10.0.0.0/8",
                                      "127.0.0.1", f".{PROXIED_NAME}"])
def test_the_proxy_is_used_exactly_when_kubectl_uses_it(serve, monkeypatch, tmp_path, cert, no_proxy):
    api = serve("healthy-pool-name")
    server, config = proxied_server(api, tmp_path, cert)
    monkeypatch.setenv("NO_PROXY", no_proxy.format(server=server.removeprefix("https://")))
    used = []
    for command in (["kubectl", "--kubeconfig", str(config), "get", "--raw", "/version"],
                    [sys.executable, "-m", "sunkcheck", "check", "--kubeconfig", str(config)]):
        with ConnectProxy() as proxy:
            subprocess.run(command, capture_output=True, timeout=60, cwd=ROOT,
                           env=dict(os.environ, HTTPS_PROXY=proxy.url, PYTHONPATH=str(ROOT)))
        used.append(proxy.log != [])
    assert used[0] == used[1] == (no_proxy in ("", f"{PROXIED_NAME}:1", "10.0.0.0/8", "127.0.0.1", f".{PROXIED_NAME}"))


@pytest.mark.parametrize("refuse, reason", [("403 Forbidden", "Tunnel connection failed: 403 Forbidden"),
                                            (None, "connection refused")])
def test_a_proxys_failure_is_blamed_on_the_proxy(serve, monkeypatch, tmp_path, cert, refuse, reason):
    api = serve("healthy-pool-name")
    server, config = proxied_server(api, tmp_path, cert)
    with ConnectProxy(refuse=refuse) as proxy:
        url = proxy.url
        if refuse is None:
            proxy.__exit__()  # nothing listens there any more
        monkeypatch.setenv("HTTPS_PROXY", url)
        r = run("check", "--kubeconfig", str(config))
    assert r.code == 3 and api.log == []
    assert r.err == (f"sunkcheck: error: the proxy {url} (HTTPS_PROXY) failed: {reason}; the API server {server} was "
                     "not reached\n")


@pytest.mark.parametrize("at", [1, 2])
def test_a_proxys_503_on_one_connect_is_retried_and_the_diagnosis_is_whole(serve, monkeypatch, tmp_path, cert, at):
    """A restarting proxy: the first CONNECT, or one after the API server answered, gets 503. Either ended the run."""
    api = serve("healthy-pool-name")
    _, config = proxied_server(api, tmp_path, cert)
    with ConnectProxy(refusals=[""] * (at - 1) + ["503 Service Unavailable"]) as proxy:
        monkeypatch.setenv("HTTPS_PROXY", proxy.url)
        r = run("check", "--kubeconfig", str(config), "-o", "json")
    assert (r.code, r.err, r.json()["errors"]) == (0, "", []) and len(proxy.log) > at


def test_a_proxy_that_keeps_failing_after_an_answer_costs_only_that_read(serve, monkeypatch, tmp_path, cert):
    from sunkcheck.collect.kube import RETRIES, CallError, Kube

    api = serve("healthy-pool-name")
    server, config = proxied_server(api, tmp_path, cert)
    with ConnectProxy() as proxy:
        monkeypatch.setenv("HTTPS_PROXY", proxy.url)
        kube = Kube(str(config))
        kube.version()
        proxy.refuse = "503 Service Unavailable"
        kube.pool.clear()  # the next GET needs a new tunnel
        with pytest.raises(CallError) as failed:  # not Unreachable, which ends the run
            kube.get("/api/v1/nodes")
    assert str(failed.value) == (f"GET /api/v1/nodes: the proxy {proxy.url} (HTTPS_PROXY) failed: Tunnel connection "
                                 f"failed: 503 Service Unavailable; the API server {server} was not reached, "
                                 f"{RETRIES + 1} times")


@pytest.mark.parametrize("answer, what", [
    (b"\x00\x01garbage\r\n\r\n", "??garbage?"),
    (b"HTTP/1.1 200 OK\r\nX: " + b"y" * 70000 + b"\r\n\r\n", "got more than 65536 bytes when reading header line"),
], ids=["garbage", "a 70 KB header line"])
def test_a_proxys_unreadable_answer_to_connect_is_blamed_on_the_proxy(serve, monkeypatch, tmp_path, cert, answer, what):
    api = serve("healthy-pool-name")
    server, config = proxied_server(api, tmp_path, cert)
    with ConnectProxy(answer=answer) as proxy:
        monkeypatch.setenv("HTTPS_PROXY", proxy.url)
        r = run("check", "--kubeconfig", str(config))
    assert r.code == 3 and api.log == []
    assert r.err == (f"sunkcheck: error: the proxy {proxy.url} (HTTPS_PROXY) failed: its answer to CONNECT cannot be read "
                     f"({what}); the API server {server} was not reached\n")


@pytest.mark.parametrize("reset", [False, True], ids=["closed", "reset"])
def test_a_proxy_that_answers_200_to_connect_then_ends_the_tunnel_is_blamed_on_the_proxy(serve, monkeypatch, tmp_path,
                                                                                          cert, reset):
    """Main blamed the API server: `TLS failure talking to https://apiserver.test:...: EOF occurred...`."""
    api = serve("healthy-pool-name")
    server, config = proxied_server(api, tmp_path, cert)
    with ConnectProxy(answer=b"HTTP/1.1 200 Connection established\r\n\r\n", reset=reset) as proxy:
        monkeypatch.setenv("HTTPS_PROXY", proxy.url)
        r = run("check", "--kubeconfig", str(config))
    assert r.code == 3 and api.log == [] and proxy.log
    assert r.err == (f"sunkcheck: error: the proxy {proxy.url} (HTTPS_PROXY) failed: it answered 200 to CONNECT, then "
                     f"closed the tunnel before the API server's TLS handshake; the API server {server} was not "
                     "reached\n")


def test_a_server_that_closes_before_tls_without_a_proxy_is_still_the_servers(tmp_path):
    """No proxy: the same end of the connection is the API server's, as before."""
    listener = socket.create_server(("127.0.0.1", 0))

    def close_each():
        with contextlib.suppress(OSError):
            while True:
                listener.accept()[0].close()

    threading.Thread(target=close_each, daemon=True).start()
    server = f"https://127.0.0.1:{listener.getsockname()[1]}"
    try:
        r = run("check", "--kubeconfig", str(kubeconfig(tmp_path / "kc", server, token=TOKEN)))
    finally:
        listener.close()
    assert r.code == 3 and r.err.startswith(f"sunkcheck: error: TLS failure talking to {server}: "), r.err
    assert "proxy" not in r.err


def test_a_socks_proxys_failure_is_blamed_on_the_proxy(serve, monkeypatch, tmp_path, cert):
    api = serve("healthy-pool-name")
    server, config = proxied_server(api, tmp_path, cert)
    with ConnectProxy() as proxy:
        url = proxy.url.replace("http://", "socks5h://")
    monkeypatch.setenv("HTTPS_PROXY", url)  # nothing listens there any more
    r = run("check", "--kubeconfig", str(config))
    assert r.code == 3 and r.err == (f"sunkcheck: error: the proxy {url} (HTTPS_PROXY) failed: connection refused; the "
                                     f"API server {server} was not reached\n")


def test_credentials_in_the_proxy_url_are_sent_to_the_proxy_and_never_printed(serve, monkeypatch, tmp_path, cert):
    api = serve("healthy-pool-name")
    server, config = proxied_server(api, tmp_path, cert)
    with ConnectProxy(credentials="scott:t@ger") as proxy:
        monkeypatch.setenv("HTTPS_PROXY", proxy.url.replace("://", "://scott:t%40ger@"))
        assert (run("check", "--kubeconfig", str(config)).code, proxy.log[-1]) == (0, server.removeprefix("https://"))
        monkeypatch.setenv("HTTPS_PROXY", proxy.url.replace("://", "://scott:wrong@"))
        r = run("check", "--kubeconfig", str(config))
    assert r.code == 3 and "wrong" not in r.err
    assert r.err == (f"sunkcheck: error: the proxy {proxy.url} (HTTPS_PROXY) failed: Tunnel connection failed: 407 "
                     f"Proxy Authentication Required; the API server {server} was not reached\n")


def test_a_proxy_quoting_its_password_back_never_gets_it_printed(serve, monkeypatch, tmp_path, cert):
    api = serve("healthy-pool-name")
    _, config = proxied_server(api, tmp_path, cert)
    with ConnectProxy(refuse="407 who is scott:t@ger?") as proxy:
        monkeypatch.setenv("HTTPS_PROXY", proxy.url.replace("://", "://scott:t%40ger@"))
        r = run("check", "--kubeconfig", str(config))
    assert r.code == 3 and "t@ger" not in r.err and "Tunnel connection failed: 407 who is scott:***?;" in r.err, r.err


def test_a_kubeconfig_proxy_url_serves_every_host_loopback_too(serve, monkeypatch, tmp_path, cert):
    """kubectl uses a cluster's proxy-url whatever the host and NO_PROXY say."""
    api = serve("healthy-pool-name")
    with ConnectProxy() as proxy:
        doc = json.loads(api.kubeconfig.read_text())
        doc["clusters"][0]["cluster"]["proxy-url"] = proxy.url
        api.kubeconfig.write_text(json.dumps(doc))
        monkeypatch.setenv("NO_PROXY", "*")
        r = run("check")
    assert (r.code, r.err) == (0, "") and set(proxy.log) == {api.url.removeprefix("https://")}


SECRET = "S3CRETpw"
# what urllib3 (or urlsplit) cannot parse, and what no proxy is: each quoted its password in an "internal error"
MALFORMED_PROXIES = [(f"http://u:{SECRET}@127.0.0.1:99999", "http://127.0.0.1:99999", "not a URL"),
                     (f"http://u:{SECRET}@127.0.0.1:notaport", "http://127.0.0.1:notaport", "not a URL"),
                     (f"http://u:{SECRET}@[bad", "http://[bad", "not a URL"),
                     (f"http://u:{SECRET}@ho st:1", "http://ho st:1", "not a URL"),
                     (f"ftp://u:{SECRET}@127.0.0.1:1", "ftp://127.0.0.1:1", "its scheme is not one of http://, https://"),
                     (f"http://u:{SECRET}@/path", "http:///path", "it names no host")]


@pytest.mark.parametrize("url, shown, why", MALFORMED_PROXIES)
def test_a_malformed_proxy_url_is_a_configuration_error_naming_the_variable_without_its_password(
        monkeypatch, tmp_path, url, shown, why):
    monkeypatch.setenv("HTTPS_PROXY", url)
    r = run("check", "--kubeconfig", str(kubeconfig(tmp_path / "kc", "https://apiserver.test:6443", token=TOKEN)))
    assert r.code == 3 and r.err.startswith(f"sunkcheck: error: HTTPS_PROXY {shown!r}: {why}"), r.err
    assert SECRET not in r.err + r.out and len(r.err.splitlines()) == 1


@pytest.mark.parametrize("url, shown, why", MALFORMED_PROXIES[:3])
def test_a_malformed_proxy_url_in_the_kubeconfig_names_the_field(tmp_path, url, shown, why):
    config = kubeconfig(tmp_path / "kc", "https://apiserver.test:6443", token=TOKEN)
    doc = json.loads(config.read_text())
    doc["clusters"][0]["cluster"]["proxy-url"] = url
    config.write_text(json.dumps(doc))
    r = run("check", "--kubeconfig", str(config))
    assert r.code == 3 and SECRET not in r.err + r.out
    assert r.err.startswith(f"sunkcheck: error: kubeconfig {config}: context test: proxy-url {shown!r}: {why}"), r.err


def test_a_server_url_is_never_printed_with_its_password(tmp_path):
    config = kubeconfig(tmp_path / "kc", f"https://u:{SECRET}@apiserver.test:99999", token=TOKEN)
    r = run("check", "--kubeconfig", str(config))
    assert r.code == 3 and r.err == (f"sunkcheck: error: kubeconfig {config}: context test: server "
                                     "'https://apiserver.test:99999' is not an http:// or https:// URL with a host\n")


def test_a_socks_proxys_credentials_go_to_the_proxy_alone(monkeypatch, tmp_path):
    """The client hands a SOCKS pool its `proxy_headers` as headers of every request: to the API server."""
    from sunkcheck.collect.kube import Kube

    monkeypatch.setenv("HTTPS_PROXY", f"socks5h://u:{SECRET}@127.0.0.1:1")
    kube = Kube(str(kubeconfig(tmp_path / "kc", "https://apiserver.test:6443", token=TOKEN)))
    assert not kube.cfg.proxy_headers and "proxy-authorization" not in str(kube.pool.headers).lower()


def test_help_says_how_proxies_are_chosen_and_that_dropped_connections_are_retried():
    from sunkcheck.collect import kube

    text = " ".join(run("check", "--help").out.split())
    assert ("Proxies as in kubectl: the cluster's proxy-url, else $HTTPS_PROXY or $HTTP_PROXY, never for loopback "
            "addresses or hosts in $NO_PROXY.") in text
    assert f"(a dropped or refused connection is retried up to {kube.RETRIES} times)" in text


# Go's own cases (golang.org/x/net/http/httpproxy proxy_test.go: TestUseProxy, TestInvalidNoProxy), and kubectl's
# CIDRs: whether a request to host:port goes direct with NO_PROXY as given.
BYPASS = [
    ("localhost", "80", "", True), ("127.0.0.1", "443", "", True), ("127.1.2.3", "443", "", True),
    ("::1", "443", "", True), ("localhost.example", "443", "", False),
    ("barbaz.net", "80", "foobar.com, .barbaz.net", False), ("www.barbaz.net", "80", "foobar.com, .barbaz.net", True),
    ("foobar.com", "80", "foobar.com, .barbaz.net", True), ("www.foobar.com", "80", "foobar.com", True),
    ("foofoobar.com", "80", "foobar.com", False), ("foo.com", "80", "*.foo.com", False),
    ("bar.foo.com", "80", "*.foo.com", True), ("anything.example", "443", "*", True),
    ("10.0.0.1", "443", "10.0.0.0/8", True), ("11.0.0.1", "443", "10.0.0.0/8", False),
    ("10.0.0.1", "443", "10.0.0.1", True), ("10.0.0.2", "443", "10.0.0.1", False),
    ("10.0.0.1", "443", "10.0.0.1:443", True), ("10.0.0.1", "6443", "10.0.0.1:443", False),
    ("2001:db8::1", "443", "2001:db8::/32", True), ("2001:db8::1", "443", "[2001:db8::1]:443", True),
    ("api.example.com", "6443", "example.com:6443", True), ("api.example.com", "443", "example.com:6443", False),
    ("api.example.com", "443", ":1,/,10.0.0.0/99,", False),  # malformed entries match nothing
    ("API.Example.COM", "443", "EXAMPLE.com", True),
]


@pytest.mark.parametrize("host, port, no_proxy, direct", BYPASS)
def test_no_proxy_is_gos(host, port, no_proxy, direct):
    assert bypassed(host, port, no_proxy) is direct


def test_the_proxy_variable_follows_the_servers_scheme_upper_case_first():
    env = {"HTTPS_PROXY": "http://upper:1", "https_proxy": "http://lower:1", "http_proxy": "plain:3128"}
    assert from_environment("https://api.example:6443", env) == ("http://upper:1", "HTTPS_PROXY")
    assert from_environment("https://api.example:6443", env | {"HTTPS_PROXY": ""}) == ("http://lower:1", "https_proxy")
    assert from_environment("http://api.example", env) == ("http://plain:3128", "http_proxy")
    assert from_environment("https://api.example", {"NO_PROXY": "api.example:443"} | env) is None  # the default port
    assert from_environment("https://api.example", {"http_proxy": "plain:3128"}) is None


def test_an_internal_error_quoting_a_url_never_prints_its_password(monkeypatch):
    """urllib3 quotes the URL it cannot parse; whatever else does, the last-resort line drops the password."""
    from sunkcheck import runner

    def broken(*args, **kwargs):
        raise ValueError(f"Failed to parse: http://u:{SECRET}@127.0.0.1:99999")

    monkeypatch.setattr(runner, "diagnose", broken)
    r = run("check", "--snapshot", str(ROOT / "fixtures" / "two-problems"), "-o", "json")
    assert r.code == 3 and "internal error: ValueError: Failed to parse: http://127.0.0.1:99999" in r.err
    assert SECRET not in r.err + r.out
