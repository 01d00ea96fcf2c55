"""What a ``waggle-store mcp`` server may do, decided and checked before any store is opened.

Three things bound an MCP client, whoever it is (a local agent over stdio, possibly
prompt-injected, or a remote client over HTTP):

- **minds**: the server is bound to one mind (``--mind``, else ``default``); a tool may name
  another only when ``--allow-mind`` lists it, or any with ``--all-minds``;
- **HTTP**: a non-loopback bind needs a bearer token (read from ``--token-env``, default
  ``WAGGLE_MCP_TOKEN``), and Host/Origin headers are checked on every bind;
- **files**: ``harvest_import`` reads only under ``--harvest-root`` directories.

This module imports no MCP SDK, so the command line can refuse a bad setting as a usage error
before the server (and the store) start.
"""

from __future__ import annotations

import ipaddress
import os
import socket
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from waggle_store.errors import InvalidInputError
from waggle_store.repositories.minds import check_mind_name

DEFAULT_TOKEN_ENV: Final = "WAGGLE_MCP_TOKEN"
#: Shortest bearer token accepted: a guessable token is no protection.
MIN_TOKEN_LENGTH: Final = 16
LOOPBACK_HOSTS: Final = ("127.0.0.1", "localhost", "[::1]")


def parse_http(address: str) -> tuple[str, int]:
    """``HOST:PORT`` (``[::1]:8000`` for IPv6) split into its parts; a bad one is refused early,
    before a store is opened."""
    host, sep, port_text = address.rpartition(":")
    host = host.strip("[]")
    if not sep or not host or not port_text.isdigit() or not 0 < int(port_text) < 65536:
        raise InvalidInputError(f"--http wants HOST:PORT (e.g. 127.0.0.1:8000), got {address!r}")
    return host, int(port_text)


def is_loopback(host: str) -> bool:
    """``localhost`` or a loopback address (127.0.0.0/8, ::1): reachable from this machine only."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@dataclass(frozen=True)
class MindAccess:
    """The minds a client may use: ``default`` serves calls naming none; ``allowed`` is the set
    a call may name (``None``: every mind of the store)."""

    default: str = "default"
    allowed: frozenset[str] | None = None

    @classmethod
    def bound(cls, mind: str = "default", also: Iterable[str] = ()) -> MindAccess:
        return cls(mind, frozenset({mind, *also}))

    @classmethod
    def every(cls, default: str = "default") -> MindAccess:
        return cls(default, None)

    def permits(self, name: str) -> bool:
        return self.allowed is None or name in self.allowed

    def describe(self) -> str:
        if self.allowed is None:
            return f"every mind (default {self.default!r})"
        others = sorted(self.allowed - {self.default})
        return f"mind {self.default!r}" + (f" and {', '.join(map(repr, others))}" if others else "")


@dataclass(frozen=True)
class HttpSettings:
    """Where streamable HTTP is served and who may call it."""

    host: str
    port: int
    token: str | None = field(default=None, repr=False)
    token_env: str = DEFAULT_TOKEN_ENV
    allowed_hosts: tuple[str, ...] = ()
    allowed_origins: tuple[str, ...] = ()

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/mcp"


@dataclass(frozen=True)
class ServerSettings:
    """Everything that bounds one server: its minds, its harvest roots, its HTTP endpoint
    (``None``: stdio)."""

    access: MindAccess = field(default_factory=MindAccess.bound)
    harvest_roots: tuple[Path, ...] = ()
    http: HttpSettings | None = None

    def banner(self) -> str:
        """What the server tells its operator on start (on stderr: stdout is the protocol on
        stdio)."""
        where = f"streamable HTTP at {self.http.url}" if self.http else "stdio"
        lines = [f"waggle-store MCP server on {where}", f"  minds: {self.access.describe()}"]
        if self.http is not None:
            lines.append("  bearer token: " + (f"required (from ${self.http.token_env})"
                                               if self.http.token else "off (loopback only)"))
            lines.append(f"  allowed Host headers: {', '.join(self.http.allowed_hosts)}")
        lines.append("  harvest roots: " + (", ".join(map(str, self.harvest_roots)) or
                                            "none (harvest_import is refused)"))
        return "\n".join(lines)


def configure(*, mind: str | None = None, allow_minds: Iterable[str] = (),
              all_minds: bool = False, http: str | None = None,
              token_env: str | None = None, allowed_hosts: Iterable[str] = (),
              allowed_origins: Iterable[str] = (), harvest_roots: Iterable[str | Path] = (),
              environ: Mapping[str, str] | None = None) -> ServerSettings:
    """The server's settings from the command's options; :class:`InvalidInputError` naming the
    option for a setting that cannot be served safely."""
    default = check_mind_name(mind or "default")
    allowed = [check_mind_name(a) for a in allow_minds]
    access = MindAccess.every(default) if all_minds else MindAccess.bound(default, allowed)
    roots = tuple(_harvest_root(r) for r in harvest_roots)
    return ServerSettings(access=access, harvest_roots=roots,
                          http=_http(http, token_env, tuple(allowed_hosts),
                                     tuple(allowed_origins), os.environ if environ is None
                                     else environ) if http else None)


def _harvest_root(root: str | Path) -> Path:
    resolved = Path(root).expanduser().resolve()
    if not resolved.is_dir():
        raise InvalidInputError(f"--harvest-root {str(root)!r} is not a directory")
    return resolved


def _http(address: str, token_env: str | None, hosts: tuple[str, ...],
          origins: tuple[str, ...], environ: Mapping[str, str]) -> HttpSettings:
    host, port = parse_http(address)
    variable = token_env or DEFAULT_TOKEN_ENV
    token = environ.get(variable) or None
    if token is None and (token_env is not None or not is_loopback(host)):
        why = ("--token-env names it" if token_env is not None
               else f"--http binds {host}, which other machines can reach")
        raise InvalidInputError(
            f"the MCP server needs a bearer token in ${variable} ({why}); set it to a long random "
            "string, e.g. python -c 'import secrets; print(secrets.token_urlsafe(32))'")
    if token is not None and len(token) < MIN_TOKEN_LENGTH:
        raise InvalidInputError(
            f"the bearer token in ${variable} is shorter than {MIN_TOKEN_LENGTH} characters")
    allowed_hosts = _dedup([*LOOPBACK_HOSTS, *_own_names(host), *hosts])
    # Each name with any port, and without one: a client behind a proxy sends the scheme's
    # default port, which Host and Origin leave out (``Host: memory.example``).
    host_patterns = tuple(_dedup(p for h in allowed_hosts
                                 for p in ((h,) if _has_port(h) else (h, f"{h}:*"))))
    origin_patterns = _dedup([*(f"{scheme}://{p}" for p in host_patterns
                                for scheme in ("http", "https")), *origins])
    return HttpSettings(host=host, port=port, token=token, token_env=variable,
                        allowed_hosts=host_patterns, allowed_origins=tuple(origin_patterns))


def _own_names(host: str) -> list[str]:
    """The Host headers clients reaching this bind use without being told: the bound address
    itself, and for a wildcard bind the machine's name."""
    if host in ("0.0.0.0", "::"):
        name = socket.gethostname()
        return [name, socket.getfqdn(name)]
    return [f"[{host}]" if ":" in host else host]


def _has_port(host: str) -> bool:
    tail = host.rsplit("]", 1)[-1]
    return ":" in tail


def _dedup(values: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(v for v in values if v))
