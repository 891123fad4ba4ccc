"""How a failed GET is told: the errors a read raises, and the server's text made one line of plain text."""

from __future__ import annotations

import re
import time
import traceback
from dataclasses import dataclass
from email.utils import parsedate_to_datetime

from sunkcheck.model import InputError
from sunkcheck.text import json_doc, safe


class Unreachable(InputError):
    """The API server cannot be used at all (connection, TLS, authentication): nothing can be checked. Waiting may
    help (a restarting API server) unless it rejected the credentials."""

    def __init__(self, message: str, lasting: bool = False):
        super().__init__(message, lasting)


@dataclass
class CallError(Exception):
    """One GET failed; the steps that need it are reported unknown, the others carry on."""

    path: str
    status: int
    message: str

    def __str__(self) -> str:
        return self.message

    @property
    def lasting(self) -> bool:
        """Whether sending it again later cannot help: not a connection's failure (status 0), 429 or 5xx."""
        return self.status not in (0, 429) and self.status < 500


class Dropped(CallError):
    """The connection was reset or closed before the whole answer came (a restarting API server, a load
    balancer closing an idle kept-alive connection): the GET is sent again."""


class NoConnection(Dropped):
    """No connection could be made (refused while the API server restarts, a proxy's 503): sent again too. Its
    message says why without the request: until the API server first answers, it means the server cannot be used."""



def status_message(body: bytearray) -> str:
    try:
        doc = json_doc(body)
        return one_line(doc.get("message") or doc.get("reason") or "no message")
    except (ValueError, AttributeError):
        return one_line(body.decode("utf-8", "replace")[:200] or "no message")


def retry_after(value: str | None) -> float | None:
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        try:
            return max(0.0, parsedate_to_datetime(value).timestamp() - time.time())
        except (TypeError, ValueError):
            return None


TRANSIENT = re.compile(r"Connection refused|Connection reset by peer|Remote end closed connection|"
                        r"Tunnel connection failed: (429|5\d\d)\b")


def in_tunnel(error: BaseException) -> bool:
    """Whether `error` was raised reading a proxy's answer to CONNECT (urllib3's or http.client's _tunnel)."""
    return any(frame.f_code.co_name == "_tunnel" for frame, _ in traceback.walk_tb(error.__traceback__))


def reason(error: BaseException) -> str:
    inner = getattr(error, "reason", None) or error
    text = str(inner).rpartition("Failed to establish a new connection: ")[2]  # not the connection's repr
    for known in ("Connection refused", "Name or service not known", "No route to host", "timed out",
                  "Temporary failure in name resolution", "certificate verify failed", "Connection reset by peer",
                  "Remote end closed connection without response"):
        if known in text:
            return known.lower()
    return one_line(text)


def one_line(text: object) -> str:
    """Server text as one line of plain text: it reaches stderr and JSON, so no escapes or controls."""
    return safe(text, one_line=True) or "no detail"
