"""Command-line wiring only: options -> Target -> pipeline -> render -> exit code."""

from __future__ import annotations

import contextlib
import enum
import os
import shutil
import sys
from dataclasses import replace
from pathlib import Path
from typing import Optional

import typer

from sunkcheck import __version__
from sunkcheck.bounds import LIMIT, LINE, bounded, bounded_explanation
from sunkcheck.duration import HANDSHAKE_TIMEOUT, REQUEST_TIMEOUT
from sunkcheck.model import InputError, Report, Source, Status
from sunkcheck.text import escaping_output, safe, without_userinfo
from sunkcheck.render import Output

EXIT_CODES_HELP = ("Exit codes (Nagios convention): 0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN (could not check: "
                   "bad arguments, unreadable snapshot, unreachable API, missing permission or API). The worst "
                   "result wins: CRITICAL, then UNKNOWN, then WARNING.")

app = typer.Typer(
    help="Is this SUNK NodeSet bound to the right CKS Node Pool, and if not, why?",
    epilog=EXIT_CODES_HELP, no_args_is_help=True, add_completion=True, rich_markup_mode=None,
    pretty_exceptions_enable=False, context_settings={"help_option_names": ["-h", "--help"]},
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"sunkcheck {__version__}")
        raise typer.Exit(0)


@app.callback()
def _root(version: bool = typer.Option(False, "--version", callback=_version, is_eager=True,
                                       help="Print the version and exit.")) -> None:
    pass


# --- shell completion: quick, and silent when it cannot help -----------------------------------------

def _complete_ids(incomplete: str) -> list[str]:
    return sorted(i for i in _known_ids() if i.startswith(incomplete))


def _complete_contexts(ctx: typer.Context, incomplete: str) -> list[str]:
    from sunkcheck.collect.kube import context_names

    try:
        return [n for n in context_names(ctx.params.get("kubeconfig")) if n.startswith(incomplete)]
    except Exception:  # noqa: BLE001 - a broken kubeconfig offers nothing, it does not break the shell
        return []


def _complete_from_snapshot(resource: str):
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


# --- shared options ---------------------------------------------------------------------------------

SNAPSHOT = typer.Option(None, "--snapshot", metavar="DIR",
                        help="Replay a recorded snapshot directory (kubectl -o json files) instead of the live cluster.")
KUBECONFIG = typer.Option(None, "--kubeconfig", metavar="PATH",
                          help="kubeconfig file (default: $KUBECONFIG, then ~/.kube/config). Proxies as in kubectl: "
                               "the cluster's proxy-url, else $HTTPS_PROXY or $HTTP_PROXY, never for loopback "
                               "addresses or hosts in $NO_PROXY.")
CONTEXT = typer.Option(None, "--context", metavar="NAME", help="kubeconfig context (default: the current one).",
                       autocompletion=_complete_contexts)
MIN_INTERVAL = 0.1  # seconds between --wait's polls, at least: the API server's load
TIMEOUT = typer.Option(None, "--request-timeout", metavar="DURATION",
                       help=f"Give up on one API request, its pages and retries included (a dropped or refused "
                            f"connection is retried up to 3 times), after this long (default "
                            f"{REQUEST_TIMEOUT:g}s; e.g. 5s, 2m; 0 = never). Connecting (TCP and TLS) always gives up "
                            f"after {HANDSHAKE_TIMEOUT:g}s, like kubectl.")
NAMESPACE = typer.Option(None, "-n", "--namespace", help="Namespace (live default: the context's; replay default: all).")
ALL_NAMESPACES = typer.Option(False, "-A", "--all-namespaces", help="Every namespace.")
NODESET = typer.Option(None, "--nodeset", metavar="NAME", help="One NodeSet (default: all in scope).",
                       autocompletion=_complete_from_snapshot("nodesets"))
DAEMONSET = typer.Option(None, "--daemonset", metavar="NAME", help="A plain DaemonSet's node scoping instead of NodeSets.",
                         autocompletion=_complete_from_snapshot("daemonsets"))
VERBOSITY = typer.Option(0, "-v", "--v", metavar="N",
                         help="Log level, as kubectl's: 6 prints each API request on stderr (method, URL, status, "
                              "milliseconds, bytes), 7 and above its headers too (credentials redacted). "
                              "SUNKCHECK_DEBUG=1 turns an internal error's one line into a traceback.")
OUTPUT = typer.Option(None, "-o", "--output",
                      help="table (default on a terminal), plain (default when piped), json, nagios, html "
                           "(one self-contained page).")


def _access(snapshot: Optional[Path], kubeconfig: Optional[str], context: Optional[str], timeout: Optional[str]):
    from sunkcheck import duration
    from sunkcheck.source import Access

    # unset means the default deadline; only an explicit 0 means none
    seconds = None if timeout is None else duration.parse(timeout, "--request-timeout")
    if snapshot is None:
        _check_context(kubeconfig, context)
    return Access(snapshot, kubeconfig, context, seconds)


def _target(nodeset, daemonset, namespace, all_namespaces, pools=(), ignore=()):
    from sunkcheck import objects as o
    from sunkcheck.target import Target

    # names go into URL paths and selectors: only what the API server could hold, as it would spell it
    _check_names(("-n/--namespace", namespace, o.DNS_LABEL), ("--nodeset", nodeset, o.DNS_SUBDOMAIN),
                 ("--daemonset", daemonset, o.DNS_SUBDOMAIN), *(("--pool", pool, o.LABEL_VALUE) for pool in pools))
    if all_namespaces and namespace:
        raise InputError("-A/--all-namespaces and -n/--namespace exclude each other")
    if nodeset and daemonset:
        raise InputError("--nodeset and --daemonset exclude each other")
    _check_ids(ignore)
    return Target(nodeset=nodeset, daemonset=daemonset, namespace=namespace, pools=tuple(pools), ignore=frozenset(ignore))


def _check_names(*checks) -> None:
    """Each (flag, value, Syntax): a value given that the API server would refuse is a usage error."""
    for flag, value, syntax in checks:
        if value is not None and not (value and syntax.fits(value)):
            raise InputError(f"{flag} {value!r}: not a name the API server accepts; expected {syntax.description}")


def _slurm(login, partition, user, keys, config, timeout, accept_new):
    """The Slurm step's settings, or None; SSH flags without --login are a usage error, not ignored."""
    if login is None:
        if partition or user or keys or config or accept_new:
            raise InputError("--partition and the --ssh-* options need --login (the Slurm login node)")
        return None
    from sunkcheck import duration
    from sunkcheck.collect.sinfo import parse_login, validate_user
    from sunkcheck.slurm import validate_partition
    from sunkcheck.target import SlurmLogin

    seconds = duration.parse(timeout, "--ssh-timeout")
    parse_login(login)  # refused before anything connects, or expands it into a ProxyCommand
    return SlurmLogin(login, validate_partition(partition) if partition else None, validate_user(user) if user else None,
                      tuple(keys), config, seconds or 10.0, accept_new)


def _auto_output(output: Optional[Output]) -> Output:
    if output is not None:
        return output
    return Output.TABLE if sys.stdout.isatty() else Output.PLAIN


_owed: Optional[Output] = None
"""The document the running command owes its reader: main prints a machine-readable one even after a bug, and a
stop signal any (the text formats included)."""
_owed_textfile: Optional[Path] = None
"""The --textfile a stop signal rewrites with `sunkcheck_up 0`: once it is known to be one sunkcheck may replace."""


def _owe(output: Optional[Output], textfile: Optional[Path] = None) -> None:
    global _owed, _owed_textfile
    _owed, _owed_textfile = output, textfile


def _print_unknown(output: Optional[Output], errors: tuple[str, ...], sources: tuple[Source, ...] = (),
                   text: bool = False) -> None:
    """A run that could not check still gives JSON, Nagios and HTML readers their document (status unknown), with
    the cluster it tried when that is known; with `text`, table and plain readers theirs too."""
    if output in (Output.JSON, Output.NAGIOS, Output.HTML) or (text and output is not None):
        from sunkcheck.render import render

        sys.stdout.write(render(Report((), errors, sources), output))


def _check_ids(ignore) -> None:
    from sunkcheck.suggest import did_you_mean

    known = _known_ids() if ignore else set()  # the registry loads the lint rules too: only when needed
    unknown = sorted(set(ignore) - known)
    if unknown:
        raise InputError(f"--ignore: unknown symptom id(s) {', '.join(unknown)}{did_you_mean(unknown[0], known)} "
                         "(see `sunkcheck rules`)")


def _known_ids() -> set[str]:
    from sunkcheck.symptoms.table import LINT_RULES, RULES
    return {r.id for r in RULES + LINT_RULES}


def _width(output: Output | None = None) -> int | None:
    """The terminal's columns, or $COLUMNS; else 80, but no width for plain text (piped to grep or a log):
    its summary keeps a line per target."""
    if output is Output.PLAIN:
        return shutil.get_terminal_size((0, 0)).columns or None
    return shutil.get_terminal_size().columns


# --- commands ---------------------------------------------------------------------------------------

@app.command(epilog=EXIT_CODES_HELP)
def check(
    snapshot: Optional[Path] = SNAPSHOT, kubeconfig: Optional[str] = KUBECONFIG,
    context: list[str] = typer.Option([], "--context", metavar="NAME", autocompletion=_complete_contexts,
                                      help="kubeconfig context (repeatable: clusters are checked concurrently)."),
    all_contexts: bool = typer.Option(False, "--all-contexts", help="Every context of the kubeconfig."),
    request_timeout: Optional[str] = TIMEOUT, nodeset: Optional[str] = NODESET, daemonset: Optional[str] = DAEMONSET,
    namespace: Optional[str] = NAMESPACE, all_namespaces: bool = ALL_NAMESPACES,
    pool: list[str] = typer.Option([], "--pool", metavar="NAME",
                                   help="Node Pool the NodeSet is meant for (repeatable; default: derived from the NodeSet)."),
    ignore: list[str] = typer.Option([], "--ignore", metavar="ID", autocompletion=_complete_ids,
                                     help="Report this symptom id as suppressed (repeatable; or annotate the object "
                                          "with sunkcheck.io/ignore: ID,ID)."),
    save: Optional[Path] = typer.Option(None, "--save", metavar="DIR", help="Also write what was read as a snapshot."),
    force: bool = typer.Option(False, "--force", help="With --save: replace the snapshot already in DIR."),
    values: list[Path] = typer.Option([], "--values", "-f", metavar="FILE",
                                      help="What-if: judge the NodeSets these SUNK values would create (repeatable, "
                                           "merged like helm -f) against the cluster's Nodes, before deploying. They are "
                                           "predicted in -n's namespace, else a deployed NodeSet's of the same name, "
                                           "else the context's (where helm installs without -n; a snapshot: the "
                                           "one it was read in)."),
    release: str = typer.Option("slurm", "--release", metavar="NAME", help="With --values: the Helm release name."),
    wait: str = typer.Option("0", "--wait", metavar="DURATION",
                             help="Wait until the binding converges (pool CURRENT = TARGET, FEASIBLE = pool Nodes, "
                                  "DESIRED = replicas or FEASIBLE, READY = the lower of DESIRED and FEASIBLE (or more "
                                  "by Pods left on Nodes in repair), Slurm = READY), e.g. 20m: one list, then the changes "
                                  "(watched; polled where watching is not allowed, or with --save, --login or "
                                  "several contexts)."),
    interval: Optional[str] = typer.Option(None, "--interval", metavar="DURATION",
                                           help="With --wait: time between progress lines (between polls where it polls), above "
                                                "0 and at most --wait (default 10s)."),
    login: Optional[str] = typer.Option(None, "--login", metavar="[USER@]HOST[:PORT]",
                                        help="Compare with Slurm: run sinfo on this login node over SSH "
                                             "(an ssh_config Host works)."),
    partition: Optional[str] = typer.Option(None, "--partition", metavar="NAME",
                                            help="Slurm partition to compare "
                                                 "(default: Slurm nodes named like the NodeSet's Pods)."),
    ssh_user: Optional[str] = typer.Option(None, "--ssh-user", metavar="USER",
                                           help="SSH user (default: ssh_config, then yours)."),
    ssh_key: list[str] = typer.Option([], "--ssh-key", metavar="PATH",
                                      help="Private key to offer (repeatable; the agent is used too)."),
    ssh_config: Optional[str] = typer.Option(None, "--ssh-config", metavar="PATH",
                                             help="ssh_config file (default ~/.ssh/config)."),
    ssh_timeout: str = typer.Option("10s", "--ssh-timeout", metavar="DURATION",
                                    help="Connect timeout, and one deadline for the whole sinfo exchange."),
    accept_new_host_key: bool = typer.Option(False, "--accept-new-host-key",
                                             help="Trust and record an unknown login-node host key (OpenSSH accept-new); "
                                                  "a changed key is always refused."),
    textfile: Optional[Path] = typer.Option(None, "--textfile", metavar="PATH",
                                            help="Also write Prometheus metrics for node_exporter's textfile collector "
                                                 "(atomically; sunkcheck_up 0 when nothing could be checked)."),
    output: Optional[Output] = OUTPUT,
    problems_only: bool = typer.Option(False, "--problems-only",
                                       help="Table and plain: detail only the targets that are not OK (the summary "
                                            "table still lists them all)."),
    limit: int = typer.Option(LIMIT, "--limit", metavar="N", min=0,
                              help="Items of each list shown (a Node's reasons, a row's evidence, the commands of a "
                                   f"fix line) and {LINE:,} characters of each line; 0 shows everything."),
    verbosity: int = VERBOSITY,
) -> None:
    """Run the runbook's verification steps and match what they find against the troubleshooting table."""
    from sunkcheck import duration, runner
    from sunkcheck.render import render
    from sunkcheck.verbose import tracing

    _owe(_auto_output(output))
    try:
        if textfile is not None:  # before anything runs: with --wait, an hour before the first write
            from sunkcheck.textfile import check_target

            check_target(textfile)
            _owe(_auto_output(output), textfile)
        slurm = _slurm(login, partition, ssh_user, ssh_key, ssh_config, ssh_timeout, accept_new_host_key)
        target = replace(_target(nodeset, daemonset, namespace, all_namespaces, pool, ignore), slurm=slurm)
        access = _access(snapshot, kubeconfig, None, request_timeout)
        contexts = _contexts(snapshot, kubeconfig, context, all_contexts)
        wait_s, interval_s = duration.parse(wait, "--wait"), duration.parse(interval or "10s", "--interval")
        if interval is not None and not wait_s:
            raise InputError("--interval sets the time between --wait's polls: it needs --wait DURATION")
        if interval is not None and not 0 < interval_s <= wait_s:  # 0 would poll the API server without a pause
            raise InputError(f"--interval {interval.strip()}: the time between polls must be above 0 and at most "
                             f"--wait ({duration.shown(wait_s)})")
        if interval is not None and interval_s < MIN_INTERVAL:  # said, not raised to it in silence
            raise InputError(f"--interval {interval.strip()}: the time between polls must be at least "
                             f"{duration.shown(MIN_INTERVAL)}")
        if wait_s and snapshot is not None:
            raise InputError("--wait polls a live cluster; a snapshot never changes")

        predicted = None
        if values:
            from sunkcheck.values.lint import effective

            predicted = effective([str(v) for v in values], release)
            if wait_s:
                raise InputError("--values predicts before deploying; --wait follows a deployment")

        replace_saved = force

        def run_once():
            nonlocal replace_saved
            report = runner.check(access, contexts, target, all_namespaces, save, predicted, replace_saved)
            replace_saved = True  # with --wait, a later poll replaces the snapshot the first one saved
            return replace(report, predicted_from=tuple(map(str, values)))

        if wait_s:
            with tracing(verbosity, progress=False), _progress() as polls:
                report, converged = _wait(run_once, access, contexts, target, all_namespaces, save, wait_s, interval_s,
                                          polls.show)
            if not converged:
                from sunkcheck.converge import progress

                report = replace(report, never_converged=progress(report))
            if not _say_why_waiting_cannot_help(report, converged, polls.count) and not converged:
                sys.stderr.write(f"sunkcheck: timed out after {duration.shown(wait_s)}: never converged: "
                                 f"{safe(report.never_converged, one_line=True)}\n")
        else:
            with tracing(verbosity, progress=snapshot is None):
                report = run_once()
        if textfile is not None:  # before rendering: a failed write must change the printed status too
            report = replace(report, errors=report.errors + _write_textfile(textfile, report))
        fmt = _auto_output(output)
        printed = render(bounded(report, limit), fmt, width=_width(fmt), problems_only=problems_only)
    except InputError as e:
        # a scrape must still see that this run failed, and a monitor never receives an empty check (unless the
        # textfile is what was refused: a path that is not a regular file is never written)
        from sunkcheck.textfile import TargetError

        refused = isinstance(e, TargetError)
        errors = (str(e),) + (_write_textfile(textfile, None) if textfile is not None and not refused else ())
        _print_unknown(output, errors, (e.source,) if e.source else ())
        raise
    except Exception:  # a bug, in the checks or in rendering their report: a scrape must still see it failed
        if textfile is not None:
            _write_textfile(textfile, None)
        raise
    sys.stdout.write(printed)
    _owe(None)  # printed, and the textfile written: a stop from now on has nothing to correct
    raise typer.Exit(report.status.exit_code)


def _contexts(snapshot, kubeconfig, context: list[str], all_contexts: bool) -> list[str | None]:
    if snapshot is not None and (context or all_contexts):
        raise InputError("--snapshot replays a recording: --context and --all-contexts do not apply")
    if all_contexts:
        if context:
            raise InputError("--all-contexts and --context exclude each other")
        from sunkcheck.collect.kube import context_names

        names = context_names(kubeconfig)
        if not names:
            raise InputError("--all-contexts: the kubeconfig has no contexts")
        return list(names)
    for name in context:
        _check_context(kubeconfig, name)
    return list(dict.fromkeys(context)) or [None]


def _check_context(kubeconfig: Optional[str], name: Optional[str]) -> None:
    """A context the kubeconfig lacks is a typo: say which it has, nearest first."""
    from sunkcheck.collect.kube import context_names
    from sunkcheck.suggest import nearest_first

    if name is None or not (kubeconfig or os.environ.get("KUBECONFIG") or Path("~/.kube/config").expanduser().exists()):
        return  # no kubeconfig: the connection says so itself
    names = context_names(kubeconfig)
    if name not in names:
        raise InputError(f"--context: context {name} not in the kubeconfig (contexts there: "
                         f"{', '.join(nearest_first(name, names)) or 'none'})")


def _wait(run_once, access, contexts, target, all_namespaces: bool, save, seconds: float, interval: float, show):
    """--wait on watches (one list, then the changes) where it can: one cluster, nothing to save each poll and no
    Slurm to ask; polling otherwise, or for the time left when the role does not allow watching."""
    from sunkcheck import runner
    from sunkcheck.serve import wait as watching

    if len(contexts) == 1 and save is None and target.slurm is None:
        try:
            found = watching.watched(access, contexts[0], target, all_namespaces, seconds, interval, show)
        except watching.WatchRefused as e:
            if str(e):
                sys.stderr.write(f"sunkcheck: {e}\n")
            seconds = max(seconds - e.elapsed, 0.0)
        else:
            if found is not None:
                return found
    return runner.wait(run_once, seconds, interval, show)


def _say_why_waiting_cannot_help(report, converged: bool, polls: int) -> bool:
    """--wait ended at a dead end (or converged beside one, a replicas cap): one line saying why waiting could not
    help; whether there was one."""
    from sunkcheck.converge import settled, stuck

    why = settled(report) if converged else stuck(report)
    if why:
        when = "at the first poll" if not polls else f"after {polls + 1} polls"
        sys.stderr.write(f"sunkcheck: --wait {'returned' if converged else 'stopped'} {when}: waiting cannot help: "
                         f"{safe('; '.join(why), one_line=True)}\n")
    return bool(why)


class _progress:
    """--wait's progress on stderr: a live status line on a terminal, one line per poll otherwise."""

    count = 0
    """Polls that had not converged."""

    def __enter__(self):
        self.live = sys.stderr.isatty()
        if self.live:
            from rich.console import Console

            from sunkcheck import stop

            self.status = Console(stderr=True, highlight=False, markup=False).status("checking...")
            self.status.__enter__()
            self.undo = stop.undone(lambda: self.status.__exit__(None, None, None))  # its cursor, hidden
            self.undo.__enter__()
        return self

    def show(self, report, elapsed: float) -> None:
        from sunkcheck.converge import progress

        self.count += 1
        line = f"waiting ({elapsed:.0f}s): {safe(progress(report), one_line=True)}"
        if self.live:
            self.status.update(line)
        else:
            sys.stderr.write(f"sunkcheck: {line}\n")
            sys.stderr.flush()

    def __exit__(self, *exc):
        if self.live:
            self.undo.__exit__(*exc)
            self.status.__exit__(*exc)


def _write_textfile(path: Path, report) -> tuple[str, ...]:
    """Write the metrics; () or the error (also said on stderr), which the printed report must carry."""
    import time

    from sunkcheck.render.prometheus import render_textfile
    from sunkcheck.textfile import write_atomically

    try:
        write_atomically(path, render_textfile(report, time.time()))
    except InputError as e:
        sys.stderr.write(f"sunkcheck: error: {e}\n")
        return (str(e),)
    return ()


class ExplainOutput(str, enum.Enum):
    TABLE = "table"
    PLAIN = "plain"
    JSON = "json"


@app.command(epilog="Exit codes: 0 when the explanation was printed, 3 when it could not be (bad input).")
def explain(
    snapshot: Optional[Path] = SNAPSHOT, kubeconfig: Optional[str] = KUBECONFIG, context: Optional[str] = CONTEXT,
    request_timeout: Optional[str] = TIMEOUT, nodeset: Optional[str] = typer.Option(None, "--nodeset", metavar="NAME",
                                                                          autocompletion=_complete_from_snapshot("nodesets"),
                                                                          help="The NodeSet (default: the only one in scope)."),
    daemonset: Optional[str] = DAEMONSET, namespace: Optional[str] = NAMESPACE,
    pool: list[str] = typer.Option([], "--pool", metavar="NAME", help="Only show Nodes of this Node Pool (repeatable)."),
    node: Optional[str] = typer.Option(None, "--node", metavar="NAME",
                                       help="One Node in depth: every check with the values compared."),
    every: bool = typer.Option(False, "--all", help="Table and plain: list the Nodes of other pools too, not only "
                                                    "their count by reason (json lists every Node)."),
    output: Optional[ExplainOutput] = typer.Option(None, "-o", "--output", help="table, plain or json."),
    limit: int = typer.Option(LIMIT, "--limit", metavar="N", min=0,
                              help="Reasons shown for each Node in the table; 0 shows everything."),
    verbosity: int = VERBOSITY,
) -> None:
    """Why each Node is (not) used: affinity, taints, resources, cordon, state, claims by another NodeSet. The
    NodeSet's own pools' Nodes come first, not feasible then feasible; the other Nodes are counted by reason."""
    from sunkcheck import source
    from sunkcheck.pipeline import explain as run_explain
    from sunkcheck.render.explain import render_explanation
    from sunkcheck.verbose import tracing

    _owe(Output.JSON if output is ExplainOutput.JSON else None)
    try:
        target = _target(nodeset, daemonset, namespace, False, pool)
        with tracing(verbosity, progress=snapshot is None):
            loaded = source.load(_access(snapshot, kubeconfig, context, request_timeout), target, False, every_pod=True)
        explanation = run_explain(loaded.snapshot, loaded.target, node)
    except InputError as e:
        _print_unknown(Output.JSON if output is ExplainOutput.JSON else None, (str(e),))
        raise
    fmt = (output or _auto_output(None)).value
    sys.stdout.write(render_explanation(bounded_explanation(explanation, limit), fmt, _width(Output(fmt)), every))
    for error in loaded.errors:
        sys.stderr.write(f"sunkcheck: could not read {safe(error, one_line=True)}\n")
    for note in explanation.notes:
        sys.stderr.write(f"sunkcheck: {safe(note, one_line=True)}\n")


@app.command("snapshot")
def snapshot_cmd(
    directory: Path = typer.Argument(..., metavar="DIR", help="Where to write the snapshot files."),
    kubeconfig: Optional[str] = KUBECONFIG, context: Optional[str] = CONTEXT, request_timeout: Optional[str] = TIMEOUT,
    nodeset: Optional[str] = NODESET, daemonset: Optional[str] = DAEMONSET,
    namespace: Optional[str] = NAMESPACE, all_namespaces: bool = ALL_NAMESPACES, verbosity: int = VERBOSITY,
    force: bool = typer.Option(False, "--force", help="Replace the snapshot already in DIR."),
) -> None:
    """Record what a check reads from the live cluster (no Secrets, no tokens), to replay with --snapshot."""
    from sunkcheck import runner, snapshot, source
    from sunkcheck.verbose import tracing

    target = _target(nodeset, daemonset, namespace, all_namespaces)
    snapshot.check_destination(directory, force)  # before the cluster is read
    with tracing(verbosity, progress=True):
        loaded = source.load(_access(None, kubeconfig, context, request_timeout), target, all_namespaces, record=True)
    for path in runner.record(directory, loaded, force):
        sys.stdout.write(f"{path}\n")
    for error in loaded.errors:
        sys.stderr.write(f"sunkcheck: could not read {safe(error, one_line=True)}\n")
    raise typer.Exit(Status.UNKNOWN.exit_code if loaded.errors else 0)


@app.command(epilog=EXIT_CODES_HELP + " An error-level finding is CRITICAL, a warning WARNING, info leaves it OK.")
def lint(
    files: list[Path] = typer.Argument(..., metavar="FILE...",
                                       help="SUNK Slurm-chart values files (merged in order, like helm -f) and/or "
                                            "NodePool manifests (multi-document YAML allowed)."),
    render_: bool = typer.Option(False, "--render", help="Print the NodeSets the values create, as SUNK composes them."),
    nodeset: Optional[str] = typer.Option(None, "--nodeset", metavar="NAME",
                                          help="With --render: only this NodeSet (release-definition) or definition."),
    release: str = typer.Option("slurm", "--release", metavar="NAME", help="Helm release name (NodeSets are RELEASE-DEF)."),
    ignore: list[str] = typer.Option([], "--ignore", metavar="ID", autocompletion=_complete_ids,
                                     help="Report this finding id as suppressed (repeatable)."),
    output: Optional[Output] = typer.Option(None, "-o", "--output", help="table, plain or json."),
) -> None:
    """Lint SUNK values and Node Pool manifests before deploying; --render shows the effective NodeSets."""
    from sunkcheck.render import render
    from sunkcheck.values import lint as linting

    _owe(None if render_ else output)
    names = [str(f) for f in files]
    _check_ids(ignore)
    if render_:
        chosen = [e for e in linting.effective(names, release) if nodeset in (None, e.nodeset, e.key)]
        if nodeset and not chosen:
            raise InputError(f"--nodeset {nodeset}: no enabled definition creates it")
        sys.stdout.write(linting.render_effective(chosen))
        raise typer.Exit(0)
    try:
        report = linting.lint(names, release, frozenset(ignore))
    except InputError as e:
        _print_unknown(output, (str(e),))
        raise
    fmt = _auto_output(output)
    sys.stdout.write(render(report, fmt, width=_width(fmt)))
    raise typer.Exit(report.status.exit_code)


class LogFormat(str, enum.Enum):
    TEXT = "text"
    JSON = "json"


@app.command(epilog="Runs until SIGTERM or Ctrl-C (exit code 0); 3 when it cannot start (bad arguments, unreachable "
                    "API, the address taken).")
def serve(
    kubeconfig: Optional[str] = KUBECONFIG, context: Optional[str] = CONTEXT, request_timeout: Optional[str] = TIMEOUT,
    nodeset: Optional[str] = NODESET, daemonset: Optional[str] = DAEMONSET, namespace: Optional[str] = NAMESPACE,
    all_namespaces: bool = ALL_NAMESPACES,
    pool: list[str] = typer.Option([], "--pool", metavar="NAME",
                                   help="Node Pool the NodeSet is meant for (repeatable; default: derived from the NodeSet)."),
    ignore: list[str] = typer.Option([], "--ignore", metavar="ID", autocompletion=_complete_ids,
                                     help="Report this symptom id as suppressed (repeatable)."),
    listen: str = typer.Option("127.0.0.1:8080", "--listen", metavar="HOST:PORT",
                               help="Where to serve /metrics, /healthz, /readyz, /api/v1/check and / (default: "
                                    "loopback only; :8080 listens on every interface)."),
    log_format: LogFormat = typer.Option(LogFormat.TEXT, "--log-format",
                                         help="Each verdict change as one line of text or of JSON, on stdout."),
) -> None:
    """Watch the cluster and keep the check's diagnosis current: Prometheus metrics, the check's JSON, a status page.

    Lists, then watches, what a check reads; each change re-diagnoses the targets it can affect through the same
    pipeline as `check`. Read-only: it only ever sends GET (list and watch)."""
    import gc
    import signal
    import threading

    from sunkcheck.collect.kube import Kube
    from sunkcheck.serve.service import Service, listen_address, say

    gc.enable()  # a long-running process: the one-shot executable's GC pause does not apply
    target = _target(nodeset, daemonset, namespace, all_namespaces, pool, ignore)
    address = listen_address(listen)
    access = _access(None, kubeconfig, context, request_timeout)
    kube = Kube(access.kubeconfig, access.context, access.request_timeout)
    done = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: done.set())
    with Service(kube, target, all_namespaces, address, say, log_format.value) as service:
        sys.stderr.write(f"sunkcheck serve: listening on {service.url} (context {safe(kube.context, one_line=True)}, "
                         f"{len(service.reflectors)} watches)\n")
        while not done.wait(1.0):
            pass


class RbacOutput(str, enum.Enum):
    YAML = "yaml"
    JSON = "json"


@app.command()
def rbac(
    service_account: str = typer.Option("sunkcheck", "--service-account", metavar="NAME",
                                        help="ServiceAccount for the example binding."),
    namespace: str = typer.Option("monitoring", "-n", "--namespace", help="Namespace of that ServiceAccount."),
    output: RbacOutput = typer.Option(RbacOutput.YAML, "-o", "--output", help="yaml or json."),
    serve_role: bool = typer.Option(False, "--serve", help="The role of `sunkcheck serve` (get, list and watch)."),
) -> None:
    """Print the least-privilege ClusterRole a run needs (get/list only; watch too with --serve) and an example
    binding."""
    from sunkcheck import objects as o
    from sunkcheck.render.rbac import render_rbac

    # both go into YAML for `kubectl apply`: only names the API server would accept for them
    _check_names(("--service-account", service_account, o.DNS_SUBDOMAIN), ("-n/--namespace", namespace, o.DNS_LABEL))
    sys.stdout.write(render_rbac(service_account, namespace, output.value, serve_role))


class RulesOutput(str, enum.Enum):
    TABLE = "table"
    PLAIN = "plain"
    JSON = "json"
    MARKDOWN = "markdown"


@app.command()
def rules(rule_id: Optional[str] = typer.Argument(None, metavar="[ID]", help="Show this row in full.",
                                                  autocompletion=_complete_ids),
          output: Optional[RulesOutput] = typer.Option(None, "-o", "--output",
                                                       help="table, plain, json or markdown (the README's table); with an "
                                                            "ID, json and markdown print its row alone.")) -> None:
    """Print the symptom table: id, severity, symptom, likely cause, fix; or one row in full (with -o json or
    markdown, that row of the table)."""
    from sunkcheck.render.rules import render_rule, render_rules
    from sunkcheck.suggest import did_you_mean

    if rule_id is not None:
        if rule_id not in _known_ids():
            raise InputError(f"no symptom id {rule_id}{did_you_mean(rule_id, _known_ids())} (see `sunkcheck rules`)")
        if output in (RulesOutput.JSON, RulesOutput.MARKDOWN):
            sys.stdout.write(render_rules(output.value, only=rule_id))
        else:
            sys.stdout.write(render_rule(rule_id))
        return
    chosen = output or (RulesOutput.TABLE if sys.stdout.isatty() else RulesOutput.PLAIN)
    sys.stdout.write(render_rules(chosen.value, _width()))


def entry() -> None:
    """The `sunkcheck` executable (and `python -m sunkcheck`, `python -m sunkcheck.cli`)."""
    _exit_now(main)


def kubectl_plugin() -> None:
    """`kubectl sunkcheck ...`: kubectl runs `kubectl-sunkcheck` from PATH with the remaining arguments."""
    _exit_now(lambda: main(prog_name="kubectl sunkcheck"))


def _exit_now(run) -> None:
    """Run as a one-shot process: without the cyclic garbage collector, which would traverse the millions
    of acyclic objects that imports and API responses create (~0.07 s of a 0.9 s live check; --wait
    collects as it goes), and without tearing the interpreter down at the end: unloading the ~700
    modules a live check imports takes another ~0.1 s, and the OS frees the memory at once anyway. Exit
    handlers still run: the kubernetes client deletes there the certificate files it wrote from
    kubeconfig data."""
    import atexit
    import gc

    from sunkcheck import stop

    stop.install(_stopped)
    gc.disable()
    try:
        run()
        code = 0
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else 0 if e.code is None else Status.UNKNOWN.exit_code
    atexit._run_exitfuncs()  # noqa: SLF001 - what interpreter shutdown would call
    try:
        sys.stdout.flush()
    except BrokenPipeError:  # the reader (say, `| head`) left before the last of the output
        code = Status.UNKNOWN.exit_code
    sys.stderr.flush()
    os._exit(code)


def _interrupted() -> None:
    """Ctrl-C (or SIGINT from a supervisor): nothing was checked to the end, so UNKNOWN, as every failure is."""
    sys.stderr.write("sunkcheck: interrupted\n")
    with contextlib.suppress(Exception):
        _print_unknown(_owed, ("interrupted",))
    sys.exit(Status.UNKNOWN.exit_code)


def _stopped(reason: str) -> None:
    """A stop signal's last words (sunkcheck.stop): nothing was checked to the end, so UNKNOWN, in the document the
    command owes (JSON, Nagios, text) and in its --textfile, whose previous run's `sunkcheck_up 1` must not stand."""
    if _owed_textfile is not None:  # first: a terminal that closed (SIGHUP) fails the writes below
        _write_textfile(_owed_textfile, None)
    _print_unknown(_owed, (f"{reason} before the check finished",), text=True)
    sys.stderr.write(f"sunkcheck: {reason}: stopped before the check finished\n")


def main(argv: list[str] | None = None, prog_name: str = "sunkcheck") -> None:
    """Entry point: every failure is one line on stderr and a documented exit code, never a traceback."""
    _owe(None)  # until a command says which document it prints
    escaping_output()
    try:
        try:
            # without standalone mode click returns a command's exit code instead of exiting
            code = app(args=argv, standalone_mode=False, prog_name=prog_name)
        except SystemExit as e:  # typer's exits here: completion's 0, or stdout closed (EPIPE), reported as 1
            if e.code in (0, None):
                raise
            raise BrokenPipeError from None
        if code == 130:  # typer turns Ctrl-C into this shell convention, outside the plugin's 0-3
            _interrupted()
        sys.exit(code if isinstance(code, int) else 0)
    except typer.Exit as e:
        sys.exit(e.exit_code)
    except typer.TyperException as e:  # click's usage errors: UNKNOWN (3), not click's 2
        ctx = getattr(e, "ctx", None)
        hint = f"\nTry '{ctx.command_path} --help' for help." if ctx else ""
        sys.stderr.write(f"sunkcheck: error: {e.format_message()}{hint}\n")
        sys.exit(Status.UNKNOWN.exit_code)
    except (typer.Abort, KeyboardInterrupt):
        _interrupted()
    except InputError as e:  # its text can come from the cluster or a file: never escapes on a terminal
        sys.stderr.write(f"sunkcheck: error: {safe(e, one_line=True)}\n")
        sys.exit(Status.UNKNOWN.exit_code)
    except BrokenPipeError:  # the reader (say, `| head`) left: the exit-time flush must not complain either
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(Status.UNKNOWN.exit_code)
    except Exception as e:  # a bug: still one line, with a way to see the traceback
        if os.environ.get("SUNKCHECK_DEBUG"):
            raise
        # a URL quoted in it (urllib3 quotes one it cannot parse) loses its password
        detail = f"internal error: {type(e).__name__}: {without_userinfo(safe(e, one_line=True))}"
        sys.stderr.write(f"sunkcheck: {detail} (set SUNKCHECK_DEBUG=1 for a traceback)\n")
        with contextlib.suppress(Exception):  # a bug in the renderer itself: the line above must do
            _print_unknown(_owed, (detail,))
        sys.exit(Status.UNKNOWN.exit_code)


if __name__ == "__main__":  # `python -m sunkcheck.cli`, as the executable
    entry()
