"""The command line's options, shared by several commands or long enough to crowd a command's signature, and the
shell completion they offer (quick, and silent when it cannot help)."""

from __future__ import annotations

import enum
from collections.abc import Callable
from pathlib import Path

import typer

from sunkcheck import __version__
from sunkcheck.bounds import LIMIT, LINE
from sunkcheck.duration import HANDSHAKE_TIMEOUT, REQUEST_TIMEOUT


def _version(value: bool) -> None:
    if value:
        typer.echo(f"sunkcheck {__version__}")
        raise typer.Exit(0)


VERSION = typer.Option(False, "--version", callback=_version, is_eager=True, help="Print the version and exit.")


def _not_a_flag(ctx: typer.Context, param: typer.CallbackParam, value: str | None) -> str | None:
    """`--wait --interval 5s` takes `--interval` as --wait's value, and click would then blame the stray `5s`:
    say which option is missing its value instead (callbacks run before that complaint)."""
    if value and value.startswith("--"):
        raise typer.BadParameter(f"{value!r} is an option, not a duration (examples: 30s, 5m, 1h)")
    return value


def known_ids() -> set[str]:
    """Every symptom and lint id (the registry loads the lint rules too: only when needed)."""
    from sunkcheck.symptoms.table import LINT_RULES, RULES
    return {r.id for r in RULES + LINT_RULES}


def complete_ids(incomplete: str) -> list[str]:
    return sorted(i for i in known_ids() if i.startswith(incomplete))


def complete_contexts(ctx: typer.Context, incomplete: str) -> list[str]:
    from sunkcheck.collect.kubeconfig import context_names

    try:
        return [n for n in context_names(ctx.params.get("kubeconfig")) if n.startswith(incomplete)]
    except Exception:  # a broken kubeconfig offers nothing, it does not break the shell
        return []


def complete_from_snapshot(resource: str) -> Callable[[typer.Context, str], list[str]]:
    def complete(ctx: typer.Context, incomplete: str) -> list[str]:
        import json

        snapshot = ctx.params.get("snapshot")
        if snapshot is None:
            return []
        try:
            items = json.loads((Path(snapshot) / f"{resource}.json").read_text(encoding="utf-8")).get("items") or []
            names = {(i.get("metadata") or {}).get("name") or "" for i in items}
        except (TypeError, OSError, ValueError, AttributeError):  # no --snapshot, or not one sunkcheck can read
            return []
        return sorted(n for n in names if n.startswith(incomplete))
    return complete


# --- shared ----------------------------------------------------------------------------------------

SNAPSHOT = typer.Option(None, "--snapshot", metavar="DIR",
                        help="Replay a recorded snapshot directory (kubectl -o json files) instead of the live cluster.")
KUBECONFIG = typer.Option(None, "--kubeconfig", metavar="PATH",
                          help="kubeconfig file (default: $KUBECONFIG, then ~/.kube/config). Proxies as in kubectl: "
                               "the cluster's proxy-url, else $HTTPS_PROXY or $HTTP_PROXY, never for loopback "
                               "addresses or hosts in $NO_PROXY.")
CONTEXT = typer.Option(None, "--context", metavar="NAME", help="kubeconfig context (default: the current one).",
                       autocompletion=complete_contexts)
TIMEOUT = typer.Option(None, "--request-timeout", metavar="DURATION", callback=_not_a_flag,
                       help=f"Give up on one API request, its pages and retries included (a dropped or refused "
                            f"connection is retried up to 3 times), after this long (default "
                            f"{REQUEST_TIMEOUT:g}s; e.g. 5s, 2m; 0 = never). Connecting (TCP and TLS) always gives up "
                            f"after {HANDSHAKE_TIMEOUT:g}s, like kubectl.")
NAMESPACE = typer.Option(None, "-n", "--namespace", help="Namespace (live default: the context's; replay default: all).")
ALL_NAMESPACES = typer.Option(False, "-A", "--all-namespaces", help="Every namespace.")
NODESET = typer.Option(None, "--nodeset", metavar="NAME", help="One NodeSet (default: all in scope).",
                       autocompletion=complete_from_snapshot("nodesets"))
DAEMONSET = typer.Option(None, "--daemonset", metavar="NAME", help="A plain DaemonSet's node scoping instead of NodeSets.",
                         autocompletion=complete_from_snapshot("daemonsets"))
VERBOSITY = typer.Option(0, "-v", "--v", metavar="N",
                         help="Log level, as kubectl's: 6 prints each API request on stderr (method, URL, status, "
                              "milliseconds, bytes), 7 and above its headers too (credentials redacted). "
                              "SUNKCHECK_DEBUG=1 turns an internal error's one line into a traceback.")
OUTPUT = typer.Option(None, "-o", "--output",
                      help="table (default on a terminal), plain (default when piped), json, nagios, html "
                           "(one self-contained page).")
POOL = typer.Option([], "--pool", metavar="NAME",
                    help="Node Pool the NodeSet is meant for (repeatable; default: derived from the NodeSet).")

# --- check ------------------------------------------------------------------------------------------

CONTEXTS = typer.Option([], "--context", metavar="NAME", autocompletion=complete_contexts,
                        help="kubeconfig context (repeatable: clusters are checked concurrently).")
ALL_CONTEXTS = typer.Option(False, "--all-contexts", help="Every context of the kubeconfig.")
IGNORE = typer.Option([], "--ignore", metavar="ID", autocompletion=complete_ids,
                      help="Report this symptom id as suppressed (repeatable; or annotate the object "
                           "with sunkcheck.io/ignore: ID,ID).")
SAVE = typer.Option(None, "--save", metavar="DIR", help="Also write what was read as a snapshot.")
FORCE = typer.Option(False, "--force", help="With --save: replace the snapshot already in DIR.")
VALUES = typer.Option([], "--values", "-f", metavar="FILE",
                      help="What-if: judge the NodeSets these SUNK values would create (repeatable, "
                           "merged like helm -f) against the cluster's Nodes, before deploying. They are "
                           "predicted in -n's namespace, else a deployed NodeSet's of the same name, "
                           "else the context's (where helm installs without -n; a snapshot: the "
                           "one it was read in).")
RELEASE = typer.Option("slurm", "--release", metavar="NAME", help="With --values: the Helm release name.")
WAIT = typer.Option("0", "--wait", metavar="DURATION", callback=_not_a_flag,
                    help="Wait until the binding converges (pool CURRENT = TARGET, FEASIBLE = pool Nodes, "
                         "DESIRED = replicas or FEASIBLE, READY = the lower of DESIRED and FEASIBLE (or more "
                         "by Pods left on Nodes in repair), Slurm = READY), e.g. 20m: one list, then the changes "
                         "(watched; polled where watching is not allowed, or with --save, --login or "
                         "several contexts).")
INTERVAL = typer.Option(None, "--interval", metavar="DURATION", callback=_not_a_flag,
                        help="With --wait: time between progress lines (between polls where it polls), above "
                             "0 and at most --wait (default 10s).")
LOGIN = typer.Option(None, "--login", metavar="[USER@]HOST[:PORT]",
                     help="Compare with Slurm: run sinfo on this login node over SSH (an ssh_config Host works).")
PARTITION = typer.Option(None, "--partition", metavar="NAME",
                         help="Slurm partition to compare (default: Slurm nodes named like the NodeSet's Pods).")
SSH_USER = typer.Option(None, "--ssh-user", metavar="USER", help="SSH user (default: ssh_config, then yours).")
SSH_KEY = typer.Option([], "--ssh-key", metavar="PATH", help="Private key to offer (repeatable; the agent is used too).")
SSH_CONFIG = typer.Option(None, "--ssh-config", metavar="PATH", help="ssh_config file (default ~/.ssh/config).")
SSH_TIMEOUT = typer.Option("10s", "--ssh-timeout", metavar="DURATION", callback=_not_a_flag,
                           help="Connect timeout, and one deadline for the whole sinfo exchange.")
ACCEPT_NEW_HOST_KEY = typer.Option(False, "--accept-new-host-key",
                                   help="Trust and record an unknown login-node host key (OpenSSH accept-new); "
                                        "a changed key is always refused.")
TEXTFILE = typer.Option(None, "--textfile", metavar="PATH",
                        help="Also write Prometheus metrics for node_exporter's textfile collector "
                             "(atomically; sunkcheck_up 0 when nothing could be checked).")
PROBLEMS_ONLY = typer.Option(False, "--problems-only",
                             help="Table and plain: detail only the targets that are not OK (the summary "
                                  "table still lists them all).")
LIMIT_ITEMS = typer.Option(LIMIT, "--limit", metavar="N", min=0,
                           help="Items of each list shown (a Node's reasons, a row's evidence, the commands of a "
                                f"fix line) and {LINE:,} characters of each line; 0 shows everything.")

# --- explain ----------------------------------------------------------------------------------------


class ExplainOutput(enum.StrEnum):
    TABLE = "table"
    PLAIN = "plain"
    JSON = "json"


EXPLAIN_NODESET = typer.Option(None, "--nodeset", metavar="NAME", autocompletion=complete_from_snapshot("nodesets"),
                               help="The NodeSet (default: the only one in scope).")
EXPLAIN_POOL = typer.Option([], "--pool", metavar="NAME", help="Only show Nodes of this Node Pool (repeatable).")
NODE = typer.Option(None, "--node", metavar="NAME", help="One Node in depth: every check with the values compared.")
EVERY = typer.Option(False, "--all", help="Table and plain: list the Nodes of other pools too, not only "
                                          "their count by reason (json lists every Node).")
EXPLAIN_OUTPUT = typer.Option(None, "-o", "--output", help="table, plain or json.")
EXPLAIN_LIMIT = typer.Option(LIMIT, "--limit", metavar="N", min=0,
                             help="Reasons shown for each Node, and with --node the comparisons of each check (failing "
                                  f"ones first), {LINE:,} characters of each value; 0 shows everything.")

# --- snapshot ---------------------------------------------------------------------------------------

DIRECTORY = typer.Argument(..., metavar="DIR", help="Where to write the snapshot files.")
REPLACE = typer.Option(False, "--force", help="Replace the snapshot already in DIR.")

# --- lint -------------------------------------------------------------------------------------------

LINT_FILES = typer.Argument(..., metavar="FILE...",
                            help="SUNK Slurm-chart values files (merged in order, like helm -f) and/or "
                                 "NodePool manifests (multi-document YAML allowed).")
RENDER = typer.Option(False, "--render", help="Print the NodeSets the values create, as SUNK composes them.")
LINT_NODESET = typer.Option(None, "--nodeset", metavar="NAME",
                            help="With --render: only this NodeSet (release-definition) or definition.")
LINT_RELEASE = typer.Option("slurm", "--release", metavar="NAME", help="Helm release name (NodeSets are RELEASE-DEF).")
LINT_IGNORE = typer.Option([], "--ignore", metavar="ID", autocompletion=complete_ids,
                           help="Report this finding id as suppressed (repeatable).")
LINT_OUTPUT = typer.Option(None, "-o", "--output", help="table, plain or json.")
LINT_LIMIT = typer.Option(LIMIT, "--limit", metavar="N", min=0,
                          help="Findings shown for each definition or Node Pool (the most severe), items of each list "
                               f"in them, and {LINE:,} characters of each line; 0 shows everything.")

# --- serve ------------------------------------------------------------------------------------------


class LogFormat(enum.StrEnum):
    TEXT = "text"
    JSON = "json"


SERVE_IGNORE = typer.Option([], "--ignore", metavar="ID", autocompletion=complete_ids,
                            help="Report this symptom id as suppressed (repeatable).")
LISTEN = typer.Option("127.0.0.1:8080", "--listen", metavar="HOST:PORT",
                      help="Where to serve /metrics, /healthz, /readyz, /api/v1/check and / (default: "
                           "loopback only; :8080 listens on every interface).")
LOG_FORMAT = typer.Option(LogFormat.TEXT, "--log-format", help="Each verdict change as one line of text or of JSON, on stdout.")

# --- rbac -------------------------------------------------------------------------------------------


class RbacOutput(enum.StrEnum):
    YAML = "yaml"
    JSON = "json"


SERVICE_ACCOUNT = typer.Option("sunkcheck", "--service-account", metavar="NAME",
                               help="ServiceAccount for the example binding.")
RBAC_NAMESPACE = typer.Option("monitoring", "-n", "--namespace", help="Namespace of that ServiceAccount.")
RBAC_OUTPUT = typer.Option(RbacOutput.YAML, "-o", "--output", help="yaml or json.")
SERVE_ROLE = typer.Option(False, "--serve", help="The role of `sunkcheck serve` (get, list and watch).")

# --- rules ------------------------------------------------------------------------------------------


class RulesOutput(enum.StrEnum):
    TABLE = "table"
    PLAIN = "plain"
    JSON = "json"
    MARKDOWN = "markdown"


RULE_ID = typer.Argument(None, metavar="[ID]", help="Show this row in full.", autocompletion=complete_ids)
RULES_OUTPUT = typer.Option(None, "-o", "--output",
                            help="table, plain, json or markdown (the README's table); with an "
                                 "ID, json and markdown print its row alone.")
