"""Command-line wiring only: options -> Target -> pipeline -> render -> exit code."""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

import typer

from sunkcheck.bounds import bounded, bounded_explanation
from sunkcheck import options as opt
from sunkcheck.model import InputError, Report, Source, Status
from sunkcheck.text import escaping_output, safe, without_userinfo
from sunkcheck.render import Output

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from sunkcheck.objects import Syntax

    from sunkcheck.source import Access
    from sunkcheck.target import SlurmLogin, Target

EXIT_CODES_HELP = ("Exit codes (Nagios convention): 0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN (could not check: "
                   "bad arguments, unreadable snapshot, unreachable API, missing permission or API). The worst "
                   "result wins: CRITICAL, then UNKNOWN, then WARNING.")

app = typer.Typer(
    help="Is this SUNK NodeSet bound to the right CKS Node Pool, and if not, why?",
    epilog=EXIT_CODES_HELP, no_args_is_help=True, add_completion=True, rich_markup_mode=None,
    pretty_exceptions_enable=False, context_settings={"help_option_names": ["-h", "--help"]},
)


@app.callback()
def _root(version: bool = opt.VERSION) -> None:
    pass


def _access(snapshot: Path | None, kubeconfig: str | None, context: str | None, timeout: str | None) -> Access:
    from sunkcheck import duration
    from sunkcheck.source import Access

    # unset means the default deadline; only an explicit 0 means none
    seconds = None if timeout is None else duration.parse(timeout, "--request-timeout")
    if snapshot is None:
        _check_context(kubeconfig, context)
    return Access(snapshot, kubeconfig, context, seconds)


def _target(nodeset: str | None, daemonset: str | None, namespace: str | None, all_namespaces: bool,
            pools: Sequence[str] = (), ignore: Sequence[str] = ()) -> Target:
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


def _check_names(*checks: tuple[str, str | None, Syntax]) -> None:
    """Each (flag, value, Syntax): a value given that the API server would refuse is a usage error."""
    for flag, value, syntax in checks:
        if value is not None and not (value and syntax.fits(value)):
            raise InputError(f"{flag} {value!r}: not a name the API server accepts; expected {syntax.description}")


def _slurm(login: str | None, partition: str | None, user: str | None, keys: list[str], config: str | None,
           timeout: str, accept_new: bool) -> SlurmLogin | None:
    """The Slurm step's settings, or None; SSH flags without --login are a usage error, not ignored."""
    if login is None:
        if partition or user or keys or config or accept_new:
            raise InputError("--partition and the --ssh-* options need --login (the Slurm login node)")
        return None
    from sunkcheck import duration
    from sunkcheck.collect.sshconfig import parse_login, validate_user
    from sunkcheck.slurm import validate_partition
    from sunkcheck.target import SlurmLogin

    seconds = duration.parse(timeout, "--ssh-timeout")
    parse_login(login)  # refused before anything connects, or expands it into a ProxyCommand
    return SlurmLogin(login, validate_partition(partition) if partition else None, validate_user(user) if user else None,
                      tuple(keys), config, seconds or 10.0, accept_new)


def _auto_output(output: Output | None) -> Output:
    if output is not None:
        return output
    return Output.TABLE if sys.stdout.isatty() else Output.PLAIN


class Owed:
    """What the running command owes its readers, one for each run of main: the document main prints (status
    unknown) even after a bug, and a stop signal in any format (the text formats included); and the --textfile a
    stop rewrites with `sunkcheck_up 0`, once it is known to be one sunkcheck may replace."""

    def __init__(self) -> None:
        self.output: Output | None = None
        self.textfile: Path | None = None

    def owe(self, output: Output | None, textfile: Path | None = None) -> None:
        from sunkcheck import stop

        with stop.deferred():  # a stop meanwhile would find the rehearsal's imports half done
            self.output, self.textfile = output, textfile
            self._rehearse()

    def _rehearse(self) -> None:
        """Render the last words (neither printed nor written) so that every module they need is imported now:
        the stop handler interrupts the main thread anywhere, inside an import too, and an import lock the
        thread holds there cannot be taken again by its handler (Python 3.11's module locks are not
        reentrant): an import in the handler could wait for itself for ever."""
        if self.textfile is not None:
            import sunkcheck.textfile  # noqa: F401 - its writer
        # only the imports matter here: a bug in the rendering is the printing's own, met (and reported, the
        # textfile written first) when the report is printed, never before the run has checked anything
        with contextlib.suppress(Exception):
            if self.textfile is not None:
                _metrics(None, 0)
            _unknown(self.output, ("",), text=True)

    def last_words(self, reason: str) -> None:
        """A stop signal's (sunkcheck.stop): nothing was checked to the end, so UNKNOWN, in the document the
        command owes and in its --textfile, whose previous run's `sunkcheck_up 1` must not stand."""
        if self.textfile is not None:  # first: a terminal that closed (SIGHUP) fails the writes below
            _write_textfile(self.textfile, None)
        _print_unknown(self.output, (f"{reason} before the check finished",), text=True)
        sys.stderr.write(f"sunkcheck: {reason}: stopped before the check finished\n")


def _owed(ctx: typer.Context) -> Owed:
    """The running command's Owed (main hands it to the command line's context as its obj)."""
    return ctx.obj if isinstance(ctx.obj, Owed) else Owed()


def _print_unknown(output: Output | None, errors: tuple[str, ...], sources: tuple[Source, ...] = (),
                   text: bool = False) -> None:
    """A run that could not check still gives JSON, Nagios and HTML readers their document (status unknown), with
    the cluster it tried when that is known; with `text`, table and plain readers theirs too."""
    sys.stdout.write(_unknown(output, errors, sources, text))


def _unknown(output: Output | None, errors: tuple[str, ...], sources: tuple[Source, ...] = (),
             text: bool = False) -> str:
    """_print_unknown's document ('' where none is owed)."""
    if output in (Output.JSON, Output.NAGIOS, Output.HTML) or (text and output is not None):
        from sunkcheck.render import render

        return render(Report((), errors, sources), output)
    return ""


def _check_ids(ignore: Sequence[str]) -> None:
    from sunkcheck.suggest import did_you_mean

    known = opt.known_ids() if ignore else set()  # the registry loads the lint rules too: only when needed
    unknown = sorted(set(ignore) - known)
    if unknown:
        raise InputError(f"--ignore: unknown symptom id(s) {', '.join(unknown)}{did_you_mean(unknown[0], known)} "
                         "(see `sunkcheck rules`)")


MIN_WIDTH = 20
"""The fewest columns rendered for: a narrower terminal ($COLUMNS=1) gets lines this wide, which it wraps; within
fewer, a hanging indent or a table's gaps leave no room for any text."""


def _width(output: Output | None = None) -> int | None:
    """The terminal's columns, or $COLUMNS, at least MIN_WIDTH; else 80, but no width for plain text (piped to grep
    or a log): its summary keeps a line per target."""
    if output is Output.PLAIN:
        columns = shutil.get_terminal_size((0, 0)).columns
        return max(columns, MIN_WIDTH) if columns else None
    return max(shutil.get_terminal_size().columns, MIN_WIDTH)


# --- commands ---------------------------------------------------------------------------------------

@app.command(epilog=EXIT_CODES_HELP)
def check(
    ctx: typer.Context, snapshot: Path | None = opt.SNAPSHOT, kubeconfig: str | None = opt.KUBECONFIG,
    context: list[str] = opt.CONTEXTS, all_contexts: bool = opt.ALL_CONTEXTS, request_timeout: str | None = opt.TIMEOUT,
    nodeset: str | None = opt.NODESET, daemonset: str | None = opt.DAEMONSET,
    namespace: str | None = opt.NAMESPACE, all_namespaces: bool = opt.ALL_NAMESPACES,
    pool: list[str] = opt.POOL, ignore: list[str] = opt.IGNORE, save: Path | None = opt.SAVE, force: bool = opt.FORCE,
    values: list[Path] = opt.VALUES, release: str = opt.RELEASE, wait: str = opt.WAIT, interval: str | None = opt.INTERVAL,
    login: str | None = opt.LOGIN, partition: str | None = opt.PARTITION, ssh_user: str | None = opt.SSH_USER,
    ssh_key: list[str] = opt.SSH_KEY, ssh_config: str | None = opt.SSH_CONFIG, ssh_timeout: str = opt.SSH_TIMEOUT,
    accept_new_host_key: bool = opt.ACCEPT_NEW_HOST_KEY, textfile: Path | None = opt.TEXTFILE,
    output: Output | None = opt.OUTPUT, problems_only: bool = opt.PROBLEMS_ONLY, limit: int = opt.LIMIT_ITEMS,
    verbosity: int = opt.VERBOSITY,
) -> None:
    """Run the runbook's verification steps and match what they find against the troubleshooting table."""
    from sunkcheck import follow
    from sunkcheck.render import render
    from sunkcheck.verbose import tracing

    owed = _owed(ctx)
    owed.owe(_auto_output(output))
    try:
        if textfile is not None:  # before anything runs: with --wait, an hour before the first write
            from sunkcheck.textfile import check_target

            check_target(textfile)
            owed.owe(_auto_output(output), textfile)
        slurm = _slurm(login, partition, ssh_user, ssh_key, ssh_config, ssh_timeout, accept_new_host_key)
        target = replace(_target(nodeset, daemonset, namespace, all_namespaces, pool, ignore), slurm=slurm)
        access = _access(snapshot, kubeconfig, None, request_timeout)
        contexts = _contexts(snapshot, kubeconfig, context, all_contexts)
        wait_s, interval_s = follow.durations(wait, interval, snapshot is not None)
        run_once = _check_once(access, contexts, target, all_namespaces, save, force, values, release, wait_s)
        if wait_s:
            report = follow.until_converged(run_once, access, contexts, target, all_namespaces, save, wait_s,
                                            interval_s, verbosity)
        else:
            with tracing(verbosity, progress=snapshot is None):
                report = run_once()
        if textfile is not None:  # before rendering: a failed write must change the printed status too
            report = replace(report, errors=report.errors + _write_textfile(textfile, report))
        fmt = _auto_output(output)
        printed = render(bounded(report, limit), fmt, width=_width(fmt), problems_only=problems_only)
    except InputError as e:
        _not_checked(e, output, textfile)
        raise
    except Exception:  # a bug, in the checks or in rendering their report: a scrape must still see it failed
        if textfile is not None:
            _write_textfile(textfile, None)
        raise
    sys.stdout.write(printed)
    owed.owe(None)  # printed, and the textfile written: a stop from now on has nothing to correct
    raise typer.Exit(report.status.exit_code)


def _check_once(access: Access, contexts: list[str | None], target: Target, all_namespaces: bool,
                save: Path | None, force: bool, values: list[Path], release: str,
                wait_s: float) -> Callable[[], Report]:
    """One check of every context (a --wait poll); with --values, of the NodeSets they would create."""
    from sunkcheck import runner

    predicted = None
    if values:
        from sunkcheck.values.lint import effective

        predicted = effective([str(v) for v in values], release)
        if wait_s:
            raise InputError("--values predicts before deploying; --wait follows a deployment")
    replace_saved = force

    def run_once() -> Report:
        nonlocal replace_saved
        report = runner.check(access, contexts, target, all_namespaces, save, predicted, replace_saved)
        replace_saved = True  # with --wait, a later poll replaces the snapshot the first one saved
        return replace(report, predicted_from=tuple(map(str, values)))
    return run_once


def _not_checked(e: InputError, output: Output | None, textfile: Path | None) -> None:
    """A scrape must still see that this run failed, and a monitor never receives an empty check (unless the
    textfile is what was refused: a path that is not a regular file is never written)."""
    from sunkcheck.textfile import TargetError

    refused = isinstance(e, TargetError)
    errors = (str(e),) + (_write_textfile(textfile, None) if textfile is not None and not refused else ())
    _print_unknown(output, errors, (e.source,) if e.source else ())


def _contexts(snapshot: Path | None, kubeconfig: str | None, context: list[str],
              all_contexts: bool) -> list[str | None]:
    if snapshot is not None and (context or all_contexts):
        raise InputError("--snapshot replays a recording: --context and --all-contexts do not apply")
    if all_contexts:
        if context:
            raise InputError("--all-contexts and --context exclude each other")
        from sunkcheck.collect.kubeconfig import context_names

        names = context_names(kubeconfig)
        if not names:
            raise InputError("--all-contexts: the kubeconfig has no contexts")
        return list(names)
    for name in context:
        _check_context(kubeconfig, name)
    return list(dict.fromkeys(context)) or [None]


def _check_context(kubeconfig: str | None, name: str | None) -> None:
    """A context the kubeconfig lacks is a typo: say which it has, nearest first."""
    from sunkcheck.collect.kubeconfig import context_names
    from sunkcheck.suggest import nearest_first

    if name is None or not (kubeconfig or os.environ.get("KUBECONFIG") or Path("~/.kube/config").expanduser().exists()):
        return  # no kubeconfig: the connection says so itself
    names = context_names(kubeconfig)
    if name not in names:
        raise InputError(f"--context: context {name} not in the kubeconfig (contexts there: "
                         f"{', '.join(nearest_first(name, names)) or 'none'})")


def _write_textfile(path: Path, report: Report | None) -> tuple[str, ...]:
    """Write the metrics; () or the error (also said on stderr), which the printed report must carry."""
    import time

    from sunkcheck.textfile import write_atomically

    try:
        write_atomically(path, *_metrics(report, time.time() if report is None or report.current_at is None
                                         else report.current_at))
    except InputError as e:
        sys.stderr.write(f"sunkcheck: error: {e}\n")
        return (str(e),)
    return ()


def _metrics(report: Report | None, now: float) -> tuple[str, str]:
    """The textfile's text, and the shorter one written when that one finds no room (sunkcheck_up 0)."""
    from sunkcheck.render.prometheus import render_textfile, render_unknown

    return render_textfile(report, now), render_unknown(report, now)


@app.command(epilog="Exit codes: 0 when the explanation was printed, 3 when it could not be (bad input).")
def explain(
    ctx: typer.Context, snapshot: Path | None = opt.SNAPSHOT, kubeconfig: str | None = opt.KUBECONFIG,
    context: str | None = opt.CONTEXT, request_timeout: str | None = opt.TIMEOUT, nodeset: str | None = opt.EXPLAIN_NODESET,
    daemonset: str | None = opt.DAEMONSET, namespace: str | None = opt.NAMESPACE, pool: list[str] = opt.EXPLAIN_POOL,
    node: str | None = opt.NODE, every: bool = opt.EVERY, output: opt.ExplainOutput | None = opt.EXPLAIN_OUTPUT,
    limit: int = opt.EXPLAIN_LIMIT, verbosity: int = opt.VERBOSITY,
) -> None:
    """Why each Node is (not) used: affinity, taints, resources, cordon, state, claims by another NodeSet. The
    NodeSet's own pools' Nodes come first, not feasible then feasible; the other Nodes are counted by reason."""
    from sunkcheck import source
    from sunkcheck.pipeline import explain as run_explain
    from sunkcheck.render.explain import render_explanation
    from sunkcheck.verbose import tracing

    _owed(ctx).owe(Output.JSON if output is opt.ExplainOutput.JSON else None)
    try:
        target = _target(nodeset, daemonset, namespace, False, pool)
        with tracing(verbosity, progress=snapshot is None):
            loaded = source.load(_access(snapshot, kubeconfig, context, request_timeout), target, False, every_pod=True)
        explanation = run_explain(loaded.snapshot, loaded.target, node)
    except InputError as e:
        _print_unknown(Output.JSON if output is opt.ExplainOutput.JSON else None, (str(e),))
        raise
    fmt = (output or _auto_output(None)).value
    sys.stdout.write(render_explanation(bounded_explanation(explanation, limit), fmt, _width(Output(fmt)), every))
    for error in loaded.errors:
        sys.stderr.write(f"sunkcheck: could not read {safe(error, one_line=True)}\n")
    for note in explanation.notes:
        sys.stderr.write(f"sunkcheck: {safe(note, one_line=True)}\n")


@app.command("snapshot")
def snapshot_cmd(
    directory: Path = opt.DIRECTORY, kubeconfig: str | None = opt.KUBECONFIG, context: str | None = opt.CONTEXT,
    request_timeout: str | None = opt.TIMEOUT, nodeset: str | None = opt.NODESET, daemonset: str | None = opt.DAEMONSET,
    namespace: str | None = opt.NAMESPACE, all_namespaces: bool = opt.ALL_NAMESPACES, verbosity: int = opt.VERBOSITY,
    force: bool = opt.REPLACE,
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
    ctx: typer.Context, files: list[Path] = opt.LINT_FILES, render_: bool = opt.RENDER,
    nodeset: str | None = opt.LINT_NODESET, release: str = opt.LINT_RELEASE, ignore: list[str] = opt.LINT_IGNORE,
    output: Output | None = opt.LINT_OUTPUT, limit: int = opt.LINT_LIMIT,
) -> None:
    """Lint SUNK values and Node Pool manifests before deploying; --render shows the effective NodeSets."""
    from sunkcheck.render import render
    from sunkcheck.values import lint as linting

    _owed(ctx).owe(None if render_ else output)
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
    sys.stdout.write(render(bounded(report, limit), fmt, width=_width(fmt)))
    raise typer.Exit(report.status.exit_code)


@app.command(epilog="Runs until SIGTERM or Ctrl-C (exit code 0); 3 when it cannot start (bad arguments, unreachable "
                    "API, the address taken).")
def serve(
    kubeconfig: str | None = opt.KUBECONFIG, context: str | None = opt.CONTEXT, request_timeout: str | None = opt.TIMEOUT,
    nodeset: str | None = opt.NODESET, daemonset: str | None = opt.DAEMONSET, namespace: str | None = opt.NAMESPACE,
    all_namespaces: bool = opt.ALL_NAMESPACES, pool: list[str] = opt.POOL, ignore: list[str] = opt.SERVE_IGNORE,
    listen: str = opt.LISTEN, log_format: opt.LogFormat = opt.LOG_FORMAT,
) -> None:
    """Watch the cluster and keep the check's diagnosis current: Prometheus metrics, the check's JSON, a status page.

    Lists, then watches, what a check reads; each change re-diagnoses the targets it can affect through the same
    pipeline as `check`. Read-only: it only ever sends GET (list and watch)."""
    import signal
    import threading

    from sunkcheck.collect.kube import Kube
    from sunkcheck.serve.service import Service, listen_address, say

    # a long-running process: the diagnosis loop turns the cyclic collector on once the first lists are in
    target = _target(nodeset, daemonset, namespace, all_namespaces, pool, ignore)
    address = listen_address(listen)
    access = _access(None, kubeconfig, context, request_timeout)
    kube = Kube(access.kubeconfig, access.context, access.request_timeout)
    done = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):  # a service stopped, or its terminal closed
        if signal.getsignal(signum) is not signal.SIG_IGN:  # nohup's SIGHUP stays ignored
            signal.signal(signum, lambda *_: done.set())
    with Service(kube, target, all_namespaces, address, say, log_format.value) as service:
        sys.stderr.write(f"sunkcheck serve: listening on {service.url} (context {safe(kube.context, one_line=True)}, "
                         f"{len(service.reflectors)} watches)\n")
        while not done.wait(1.0):
            pass


@app.command()
def rbac(
    service_account: str = opt.SERVICE_ACCOUNT, namespace: str = opt.RBAC_NAMESPACE,
    output: opt.RbacOutput = opt.RBAC_OUTPUT, serve_role: bool = opt.SERVE_ROLE,
) -> None:
    """Print the least-privilege ClusterRole a run needs (get/list only; watch too with --serve) and an example
    binding."""
    from sunkcheck import objects as o
    from sunkcheck.render.rbac import render_rbac

    # both go into YAML for `kubectl apply`: only names the API server would accept for them
    _check_names(("--service-account", service_account, o.DNS_SUBDOMAIN), ("-n/--namespace", namespace, o.DNS_LABEL))
    sys.stdout.write(render_rbac(service_account, namespace, output.value, serve_role))


@app.command()
def rules(rule_id: str | None = opt.RULE_ID, output: opt.RulesOutput | None = opt.RULES_OUTPUT) -> None:
    """Print the symptom table: id, severity, symptom, likely cause, fix; or one row in full (with -o json or
    markdown, that row of the table)."""
    from sunkcheck.render.rules import render_rule, render_rules
    from sunkcheck.suggest import did_you_mean

    if rule_id is not None:
        if rule_id not in opt.known_ids():
            raise InputError(f"no symptom id {rule_id}{did_you_mean(rule_id, opt.known_ids())} (see `sunkcheck rules`)")
        if output in (opt.RulesOutput.JSON, opt.RulesOutput.MARKDOWN):
            sys.stdout.write(render_rules(output.value, only=rule_id))
        else:
            sys.stdout.write(render_rule(rule_id, _width(Output.PLAIN)))  # within the terminal, or $COLUMNS
        return
    chosen = output or (opt.RulesOutput.TABLE if sys.stdout.isatty() else opt.RulesOutput.PLAIN)
    sys.stdout.write(render_rules(chosen.value, _width()))


def entry() -> None:
    """The `sunkcheck` executable (and `python -m sunkcheck`, `python -m sunkcheck.cli`)."""
    _one_shot("sunkcheck")


def kubectl_plugin() -> None:
    """`kubectl sunkcheck ...`: kubectl runs `kubectl-sunkcheck` from PATH with the remaining arguments."""
    _one_shot("kubectl sunkcheck")


def _one_shot(prog_name: str) -> NoReturn:
    """main as the executable runs it; all it adds is what only a process of its own may do. A stop signal ends
    the run at once (sunkcheck.stop) with the document it owes. No cyclic garbage collector: it would traverse
    the millions of acyclic objects that imports and API responses create (~0.07 s of a 0.9 s live check;
    --wait collects as it goes). No interpreter teardown: unloading the ~700 modules a live check imports
    takes another ~0.1 s, and the OS frees the memory at once anyway; the exit handlers still run (they
    delete the certificate files written from kubeconfig data)."""
    import atexit
    import gc

    from sunkcheck import stop

    owed = Owed()
    stop.install(owed.last_words)
    gc.disable()
    try:
        _main(None, prog_name, owed)
        code = 0
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else 0 if e.code is None else Status.UNKNOWN.exit_code
    atexit._run_exitfuncs()  # what interpreter shutdown would call
    try:
        sys.stdout.flush()
    except BrokenPipeError:  # the reader (say, `| head`) left before the last of the output
        code = Status.UNKNOWN.exit_code
    sys.stderr.flush()
    os._exit(code)


def _interrupted(owed: Owed) -> NoReturn:
    """Ctrl-C (or SIGINT from a supervisor): nothing was checked to the end, so UNKNOWN, as every failure is."""
    sys.stderr.write("sunkcheck: interrupted\n")
    with contextlib.suppress(Exception):
        _print_unknown(owed.output, ("interrupted",))
    sys.exit(Status.UNKNOWN.exit_code)


def main(argv: list[str] | None = None, prog_name: str = "sunkcheck") -> None:
    """Entry point: every failure is one line on stderr and a documented exit code, never a traceback. It keeps
    nothing between calls: a program may run it again and again."""
    _main(argv, prog_name, Owed())


def _main(argv: list[str] | None, prog_name: str, owed: Owed) -> None:
    escaping_output()
    try:
        try:
            # without standalone mode click returns a command's exit code instead of exiting
            code = app(args=argv, standalone_mode=False, prog_name=prog_name, obj=owed)
        except SystemExit as e:  # typer's exits here: completion's 0, or stdout closed (EPIPE), reported as 1
            if e.code in (0, None):
                raise
            raise BrokenPipeError from None
        if code == 130:  # typer turns Ctrl-C into this shell convention, outside the plugin's 0-3
            _interrupted(owed)
        sys.exit(code if isinstance(code, int) else 0)
    except typer.Exit as e:
        sys.exit(e.exit_code)
    except typer.TyperException as e:  # click's usage errors: UNKNOWN (3), not click's 2
        ctx = getattr(e, "ctx", None)
        hint = f"\nTry '{ctx.command_path} --help' for help." if ctx else ""
        sys.stderr.write(f"sunkcheck: error: {e.format_message()}{hint}\n")
        sys.exit(Status.UNKNOWN.exit_code)
    except (typer.Abort, KeyboardInterrupt):
        _interrupted(owed)
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
            _print_unknown(owed.output, (detail,))
        sys.exit(Status.UNKNOWN.exit_code)


if __name__ == "__main__":  # `python -m sunkcheck.cli`, as the executable
    entry()
