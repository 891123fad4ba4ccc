"""Command-line wiring only: options -> Target -> pipeline -> render -> exit code."""

from __future__ import annotations

import enum
import os
import shutil
import sys
from pathlib import Path
from typing import Optional

import typer

from sunkcheck import __version__
from sunkcheck.model import InputError, Status
from sunkcheck.render import Output

EXIT_CODES_HELP = ("Exit codes (Nagios convention): 0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN (could not check: "
                   "bad arguments, unreadable snapshot, unreachable API). The worst result wins: CRITICAL, "
                   "then UNKNOWN, then WARNING.")

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


def _auto_output(output: Optional[Output]) -> Output:
    if output is not None:
        return output
    return Output.TABLE if sys.stdout.isatty() else Output.PLAIN


def _known_ids() -> set[str]:
    from sunkcheck.symptoms.table import RULES
    return {r.id for r in RULES}


@app.command(epilog=EXIT_CODES_HELP)
def check(
    snapshot: Path = typer.Option(..., "--snapshot", metavar="DIR",
                                  help="Replay a recorded snapshot directory (kubectl -o json files)."),
    nodeset: Optional[str] = typer.Option(None, "--nodeset", metavar="NAME", help="Check one NodeSet (default: all in scope)."),
    daemonset: Optional[str] = typer.Option(None, "--daemonset", metavar="NAME",
                                            help="Check a plain DaemonSet's node scoping instead of NodeSets."),
    namespace: Optional[str] = typer.Option(None, "-n", "--namespace", help="Namespace of the NodeSet(s)."),
    all_namespaces: bool = typer.Option(False, "-A", "--all-namespaces", help="Check NodeSets in every namespace."),
    pool: list[str] = typer.Option([], "--pool", metavar="NAME",
                                   help="Node Pool the NodeSet is meant for (repeatable; default: derived from the NodeSet)."),
    ignore: list[str] = typer.Option([], "--ignore", metavar="ID", help="Report this symptom id as suppressed (repeatable)."),
    output: Optional[Output] = typer.Option(None, "-o", "--output",
                                            help="table (default on a terminal), plain (default when piped), json."),
) -> None:
    """Run the runbook's verification steps and match what they find against the troubleshooting table."""
    from sunkcheck import snapshot as snap
    from sunkcheck.pipeline import diagnose
    from sunkcheck.render import render
    from sunkcheck.target import Target

    unknown = sorted(set(ignore) - _known_ids())
    if unknown:
        raise InputError(f"--ignore: unknown symptom id(s) {', '.join(unknown)} (see `sunkcheck rules`)")
    if all_namespaces and namespace:
        raise InputError("-A/--all-namespaces and -n/--namespace exclude each other")
    if nodeset and daemonset:
        raise InputError("--nodeset and --daemonset exclude each other")
    target = Target(nodeset=nodeset, daemonset=daemonset, namespace=namespace, pools=tuple(pool),
                    ignore=frozenset(ignore))
    report = diagnose(snap.load(snapshot), target)
    sys.stdout.write(render(report, _auto_output(output), width=shutil.get_terminal_size().columns))
    raise typer.Exit(report.status.exit_code)


@app.command(epilog="Exit codes: 0 when the explanation was printed, 3 when it could not be (bad input).")
def explain(
    snapshot: Path = typer.Option(..., "--snapshot", metavar="DIR", help="Replay a recorded snapshot directory."),
    nodeset: Optional[str] = typer.Option(None, "--nodeset", metavar="NAME",
                                          help="The NodeSet (default: the only one in scope)."),
    daemonset: Optional[str] = typer.Option(None, "--daemonset", metavar="NAME", help="Explain a DaemonSet instead."),
    namespace: Optional[str] = typer.Option(None, "-n", "--namespace", help="Namespace of the NodeSet or DaemonSet."),
    pool: list[str] = typer.Option([], "--pool", metavar="NAME", help="Only show Nodes of this Node Pool (repeatable)."),
    node: Optional[str] = typer.Option(None, "--node", metavar="NAME",
                                       help="One Node in depth: every check with the values compared."),
    output: Optional[Output] = typer.Option(None, "-o", "--output", help="table, plain or json."),
) -> None:
    """Why each Node is (not) used: affinity, taints, resources, cordon, state, claims by another NodeSet."""
    from sunkcheck import snapshot as snap
    from sunkcheck.pipeline import explain as run_explain
    from sunkcheck.render.explain import render_explanation
    from sunkcheck.target import Target

    if nodeset and daemonset:
        raise InputError("--nodeset and --daemonset exclude each other")
    target = Target(nodeset=nodeset, daemonset=daemonset, namespace=namespace, pools=tuple(pool))
    explanation = run_explain(snap.load(snapshot), target, node)
    sys.stdout.write(render_explanation(explanation, _auto_output(output).value, shutil.get_terminal_size().columns))


class RulesOutput(str, enum.Enum):
    TABLE = "table"
    PLAIN = "plain"
    JSON = "json"
    MARKDOWN = "markdown"


@app.command()
def rules(output: Optional[RulesOutput] = typer.Option(None, "-o", "--output",
                                                       help="table, plain, json or markdown (the README's table).")) -> None:
    """Print the symptom table: id, severity, symptom, likely cause, fix."""
    from sunkcheck.render.rules import render_rules

    chosen = output or (RulesOutput.TABLE if sys.stdout.isatty() else RulesOutput.PLAIN)
    sys.stdout.write(render_rules(chosen.value))


def main(argv: list[str] | None = None) -> None:
    """Entry point: every failure is one line on stderr and a contract-4 exit code, never a traceback."""
    try:
        # without standalone mode click returns a command's exit code instead of exiting
        code = app(args=argv, standalone_mode=False, prog_name="sunkcheck")
        sys.exit(code if isinstance(code, int) else 0)
    except typer.Exit as e:
        sys.exit(e.exit_code)
    except typer.TyperException as e:  # click's usage errors: UNKNOWN (3), not click's 2
        ctx = getattr(e, "ctx", None)
        hint = f"\nTry '{ctx.command_path} --help' for help." if ctx else ""
        sys.stderr.write(f"sunkcheck: error: {e.format_message()}{hint}\n")
        sys.exit(Status.UNKNOWN.exit_code)
    except (typer.Abort, KeyboardInterrupt):
        sys.stderr.write("sunkcheck: interrupted\n")
        sys.exit(Status.UNKNOWN.exit_code)
    except InputError as e:
        sys.stderr.write(f"sunkcheck: error: {e}\n")
        sys.exit(Status.UNKNOWN.exit_code)
    except BrokenPipeError:
        sys.exit(Status.UNKNOWN.exit_code)
    except Exception as e:  # a bug: still one line, with a way to see the traceback
        if os.environ.get("SUNKCHECK_DEBUG"):
            raise
        sys.stderr.write(f"sunkcheck: internal error: {type(e).__name__}: {e} (set SUNKCHECK_DEBUG=1 for a traceback)\n")
        sys.exit(Status.UNKNOWN.exit_code)
