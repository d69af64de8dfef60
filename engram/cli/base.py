"""What every ``engram`` command shares: global and output options, errors, opening the ledger.

Exit codes: 0 success; 1 a failure at run time (a check failed, the ledger is missing, the
database or a query refused, the input data is wrong); 2 a usage error (the command line or
the configuration it names is wrong, or the ledger it names is not one). A closed pipe on
stdout (``engram log | head``) ends the command quietly with 0. Ctrl-C exits with 130.
"""

from __future__ import annotations

import math
import os
import re
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager, suppress
from datetime import UTC, datetime
from typing import IO, Any, TypeVar
from urllib.parse import urlsplit, urlunsplit

import click

from engram.agents.errors import AgentError
from engram.cli import logs
from engram.cli.render import FORMATS, Record, render
from engram.config import Settings, resolve_settings
from engram.errors import InterfaceError
from engram.ledger import (
    ConfigError,
    Ledger,
    LedgerError,
    LedgerNotFoundError,
    NotALedgerError,
    StoreError,
    backends,
)
from engram.progress import ProgressBar
from engram.projections.engine import ProjectionStatus
from engram.projections.errors import ProjectionError, UnknownProjectionError
from engram.runtime import Memory, open_parts, open_settings, registry_for

F = TypeVar("F", bound=Callable[..., Any])

CONTEXT = {"help_option_names": ["-h", "--help"], "max_content_width": 100}


class CliError(click.ClickException, InterfaceError):
    """A failure at run time: printed as ``engram COMMAND: error: ...``, exit code 1."""

    exit_code = 1

    def __init__(self, message: str) -> None:
        super().__init__(message)
        ctx = click.get_current_context(silent=True)
        self.where = ctx.command_path if ctx is not None else "engram"

    def show(self, file: IO[Any] | None = None) -> None:
        """Print the message on stderr, on one line, prefixed with the command that failed.

        Messages quote input (a field name, a value), which may hold line breaks or other
        control characters: they are shown escaped, so an error is always one line.
        """
        click.echo(f"{self.where}: error: {one_line(self.format_message())}", err=True)


_CONTROL = {c: f"\\x{c:02x}" for c in (*range(32), 127, 0x85)} | {
    10: "\\n",
    13: "\\r",
    9: "\\t",
    0x2028: "\\u2028",
    0x2029: "\\u2029",
}


def one_line(text: str) -> str:
    """Return ``text`` with line breaks and other control characters escaped."""
    return text.translate(_CONTROL)


class NoLedgerError(CliError):
    """A command that only reads was pointed at a ledger that does not exist."""


class BadLedgerError(CliError):
    """The ledger named is not one (a directory, an empty file, not a database): exit code 2."""

    exit_code = 2


class _OutputClosed(Exception):
    """Whoever read our stdout has gone (``engram log | head``): stop, quietly."""


class State:
    """What one invocation carries: the output stream and the global options given."""

    def __init__(self, out: IO[str] | None = None) -> None:
        self._out = out
        self.options: dict[str, Any] = {}

    @property
    def out(self) -> IO[str]:
        """Return the stream records go to: the one given, else the current stdout."""
        return self._out if self._out is not None else sys.stdout

    @property
    def verbosity(self) -> int:
        """Return ``logs.QUIET``, ``logs.NORMAL`` or ``logs.VERBOSE`` from ``-q``/``-v``."""
        if self.options.get("quiet"):
            return logs.QUIET
        return logs.VERBOSE if self.options.get("verbose") else logs.NORMAL

    def progress(self) -> ProgressBar | None:
        """Return a progress bar for a long step, or None under ``-q``."""
        return None if self.verbosity == logs.QUIET else ProgressBar()

    def settings(self, *, create: bool = False) -> Settings:
        """Resolve where the ledger is; unless ``create``, fail when there is no ledger there."""
        o = self.options
        try:
            settings = resolve_settings(
                o.get("ledger"),
                config=o.get("config"),
                pg_schema=o.get("pg_schema"),
                durability=o.get("durability"),
                tenant=o.get("tenant"),
            )
        except ConfigError as exc:
            raise click.UsageError(str(exc)) from None
        logs.logger.debug(
            "ledger %s (from %s)%s, projections in %s",
            redacted(settings.ledger),
            settings.source,
            f", tenant {settings.tenant}" if settings.tenant else "",
            settings.projection_store,
        )
        _require_ledger(settings, create=create)
        return settings

    def echo(self, text: str = "") -> None:
        """Print one line of output."""
        try:
            self.out.write(text + "\n")
        except BrokenPipeError:
            raise _OutputClosed from None

    def render(self, records: Iterable[Record], fmt: str, **options: Any) -> int:
        """Print records in ``fmt`` with the shared renderer; return how many."""
        try:
            return render(records, fmt, self.out, **options)
        except BrokenPipeError:
            raise _OutputClosed from None

    def flush(self) -> None:
        """Flush the output, so a reader that has gone is noticed here, not at exit."""
        try:
            self.out.flush()
        except BrokenPipeError:
            raise _OutputClosed from None


def state() -> State:
    """Return the current invocation's state."""
    return click.get_current_context().find_root().ensure_object(State)


def note(message: str) -> None:
    """Tell the user something on stderr (hidden by ``-q``); stdout keeps only the output."""
    logs.logger.info(message)


# -- global options, accepted before and after the command ----------------------------------


def _remember(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
    if value is not None and value is not False and param.name is not None:
        ctx.find_root().ensure_object(State).options[param.name] = value
    return value


def global_options() -> list[click.Parameter]:
    """Return fresh copies of the options every command accepts."""

    def option(*decls: str, **attrs: Any) -> click.Option:
        return click.Option(decls, expose_value=False, callback=_remember, **attrs)

    return [
        option("--ledger", metavar="PATH|URL", help="SQLite path or postgresql:// URL."),
        option("--config", metavar="FILE", help="TOML config file (env ENGRAM_CONFIG)."),
        option(
            "--pg-schema",
            metavar="NAME",
            help="PostgreSQL schema (default engram; not information_schema or pg_*).",
        ),
        option("--tenant", metavar="NAME", help="Tenant namespace (env ENGRAM_TENANT)."),
        option("--durability", type=click.Choice(["full", "fast"]), help="Default full."),
        option("-q", "--quiet", is_flag=True, default=None, help="Print errors only."),
        option("-v", "--verbose", is_flag=True, default=None, help="Print debug messages."),
    ]


class Command(click.Command):
    """A command that accepts the global options and reports engram's errors."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("context_settings", CONTEXT)
        super().__init__(*args, **kwargs)
        self.params.extend(global_options())

    def invoke(self, ctx: click.Context) -> Any:
        """Set up logging from ``-q``/``-v``, run the command, translate its errors."""
        current = ctx.find_root().ensure_object(State)
        if current.options.get("quiet") and current.options.get("verbose"):
            raise click.UsageError("-q/--quiet and -v/--verbose exclude each other", ctx)
        _check_text(ctx, self.params)
        with logs.configured(current.verbosity), translated(ctx):
            result = super().invoke(ctx)
            current.flush()
            return result


class Group(click.Group):
    """A group whose commands and subgroups are :class:`Command` and :class:`Group`."""

    command_class = Command
    group_class = type

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("context_settings", CONTEXT)
        super().__init__(*args, **kwargs)
        self.params.extend(global_options())


def _check_text(ctx: click.Context, params: Iterable[click.Parameter]) -> None:
    """Refuse a text argument that is not UTF-8 before anything reads or writes it.

    Bytes of the command line that are not UTF-8 reach Python as lone surrogates, which no
    database, index or JSON payload can store: naming the argument here beats a traceback
    from whichever layer first tried. Paths are left alone (a file name may be any bytes).
    """
    for param in params:
        if not isinstance(param.type, click.types.StringParamType | click.Choice):
            continue
        value = ctx.params.get(param.name or "")
        for text in value if isinstance(value, tuple | list) else (value,):
            if not isinstance(text, str):
                continue
            bad = next((c for c in text if "\ud800" <= c <= "\udfff"), None)
            if bad is not None:
                byte = f" (byte 0x{ord(bad) - 0xDC00:02x})" if "\udc80" <= bad <= "\udcff" else ""
                raise click.BadParameter(f"not valid UTF-8{byte}", ctx, param)


@contextmanager
def translated(ctx: click.Context) -> Iterator[None]:
    """Turn engram's exceptions into exit codes: 1 at run time, 2 for usage."""
    try:
        yield
    except _OutputClosed:
        _silence_stdout()
        raise click.exceptions.Exit(0) from None
    except KeyboardInterrupt:
        raise click.exceptions.Exit(130) from None
    except (NotALedgerError, LedgerNotFoundError) as exc:
        raise BadLedgerError(str(exc)) from None
    except (ConfigError, UnknownProjectionError) as exc:
        raise click.UsageError(str(exc), ctx) from None
    except (LedgerError, ProjectionError, AgentError, OSError) as exc:
        raise CliError(str(exc)) from None
    except Exception as exc:
        # A database driver's error that a layer let through is still one line, not a trace.
        if type(exc).__module__.partition(".")[0] not in _DRIVERS:
            raise
        raise CliError(f"the database refused: {exc}") from None


#: The modules whose errors are a database's refusal, shown as one line when they escape.
_DRIVERS = frozenset({"sqlite3", "_sqlite3", "psycopg", "duckdb", "_duckdb", "sqlalchemy"})


def _silence_stdout() -> None:
    """Point stdout at /dev/null so the interpreter's last flush cannot fail again."""
    with suppress(OSError, ValueError):
        sys.stdout.flush()
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):  # a stream without a descriptor: nothing to do
        pass


# -- the ledger: found, never created by a reader ---------------------------------------------


def refuse_existing(path: str, force: bool, hint: str) -> None:
    """Refuse to write over ``path`` (a file, or a link, dangling or not) unless ``force``:
    an export writes a new file (ADR 0186)."""
    if os.path.lexists(path) and not force:
        raise click.BadParameter(f"{path} exists; pass --force to replace it", param_hint=hint)


def _require_ledger(settings: Settings, *, create: bool = False) -> None:
    target = settings.ledger
    init = f"engram --tenant {settings.tenant} init" if settings.tenant else "engram init"
    whose = f"tenant {settings.tenant!r}: " if settings.tenant else ""
    kind = backends.find(target)
    if kind is None:
        return
    if kind.server:
        if not create and not _server_ledger_exists(kind, target, settings.pg_schema):
            where = f"{redacted(target)} (schema {settings.pg_schema})"
            raise NoLedgerError(f"{whose}no ledger at {where}; run {init}")
        return
    path = os.path.expanduser(kind.location(target))
    if not os.path.lexists(path):
        if create:
            return
        raise NoLedgerError(f"{whose}no ledger at {target}; run {init}")
    # A reader neither creates nor writes: an empty file would become a ledger if opened
    # for writing, and a directory or a device is no ledger at all.
    if not os.path.isfile(path):
        raise BadLedgerError(f"{whose}{target} is not an engram ledger: not a regular file")
    if not create and os.path.getsize(path) == 0:
        raise BadLedgerError(f"{whose}{target} is not an engram ledger: the file is empty")


def _server_ledger_exists(kind: backends.BackendKind, url: str, schema: str) -> bool:
    if kind.exists is None:
        return True
    try:
        return kind.exists(url, schema)
    except StoreError as exc:
        raise CliError(f"cannot reach the ledger at {redacted(url)}: {exc}") from None


def redacted(url: str) -> str:
    """Return ``url`` with its password, if any, replaced by ``***``."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    return urlunsplit(parts._replace(netloc=parts.netloc.replace(f":{parts.password}@", ":***@")))


def open_ledger(settings: Settings, *, readonly: bool = False) -> Ledger:
    """Open the ledger ``settings`` name, with every kind the registry knows.

    Readers pass ``readonly``: the ledger is then never created nor written, and one on
    read-only media can still be read (ADR 0022).
    """
    return open_settings(settings, registry_for(settings), readonly=readonly)


@contextmanager
def opened(settings: Settings, *, actor: str = "cli", catch_up: bool = True) -> Iterator[Memory]:
    """Open the ledger and the projections, caught up unless told not to, with progress."""
    with open_parts(settings, actor=actor) as memory:
        if catch_up:
            bring_up_to_date(memory)
        yield memory


#: A catch-up behind by fewer events than this is quick enough to need no notice.
NOTICE_LAG = 10_000


def bring_up_to_date(memory: Memory) -> None:
    """Catch the projections up, saying why when it takes a while; show progress meanwhile.

    A rebuild that was interrupted, or a projection whose code changed, is rebuilt here
    before the command answers: the user is told, rather than left waiting in silence.
    """
    rows = memory.engine.status()
    rebuilding = [r.name for r in rows if r.state in ("rebuilding", "stale")]
    behind = [r for r in rows if r.lag > 0]
    if not rebuilding and not behind:
        return
    head = rows[0].head if rows else 0
    if rebuilding:
        note(f"rebuilding {', '.join(rebuilding)} first ({_why_rebuilt(rows)}; {head:,} events)")
    elif max(r.lag for r in behind) >= NOTICE_LAG:
        lag = max(r.lag for r in behind)
        note(f"catching up {', '.join(r.name for r in behind)}: {lag:,} new events")
    bar = state().progress()
    if bar is None:
        memory.engine.catch_up()
        return
    label, total = ("rebuild", head) if rebuilding else ("catch-up", max(r.lag for r in behind))
    with bar.start(label, total):
        memory.engine.catch_up(progress=bar)


_EMBEDDER = re.compile(r'embedder=\{"provider":"([^"]*)","model":"([^"]*)"')


def _why_rebuilt(rows: Sequence[ProjectionStatus]) -> str:
    """Say why the projections being rebuilt are: the embedder changed (the store was built
    with another, named), the projection's code or config changed, or a rebuild was cut."""
    for row in rows:
        if row.state != "stale" or not row.stored_identity:
            continue
        now, then = _EMBEDDER.search(row.identity), _EMBEDDER.search(row.stored_identity)
        if now and then and now.groups() != then.groups():
            return (
                f"the store was built with the {then[1]} embedder ({then[2]}), this command"
                f" runs {now[1]} ({now[2]}): ENGRAM_EMBEDDER or the routing file chose it;"
                " set it as before to keep the store's vectors"
            )
    if any(r.state == "stale" for r in rows):
        return "the projection's code or configuration changed"
    return "a rebuild was interrupted"


def sync_vectors(memory: Memory) -> None:
    """Load (or, after a rebuild, build) the vector index before a recall, showing the time."""
    bar = state().progress()
    with memory.engine.read() as conn:
        if bar is None:
            memory.searcher.sync(conn)
            return
        with bar.start("loading the vector index"):
            memory.searcher.sync(conn)


# -- shared option decorators -----------------------------------------------------------------


def output_format(default: str = "table") -> Callable[[F], F]:
    """Add ``--format table|csv|json|jsonl`` to a command that prints records."""
    return click.option(
        "--format",
        "fmt",
        type=click.Choice(FORMATS),
        default=default,
        show_default=True,
        help="Output format: an aligned table, CSV, a JSON array or JSON lines.",
    )


class Time(click.ParamType):  # type: ignore[type-arg]  # generic only in newer click
    """``now`` or an ISO-8601 time with a timezone (``Z`` allowed)."""

    name = "TIME"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        """Parse ``value`` into an aware datetime."""
        if isinstance(value, datetime):
            return value
        text = str(value).strip()
        if text.lower() == "now":
            return datetime.now(UTC)
        try:
            parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
        except ValueError:
            self.fail(f"not an ISO-8601 time: {value!r} (e.g. 2026-05-01T12:00:00Z)", param, ctx)
        if parsed.tzinfo is None:
            at = text if "T" in text or " " in text else f"{text}T00:00:00"  # a date alone
            self.fail(f"{value!r} has no timezone; add one, e.g. {at}Z or {at}+00:00", param, ctx)
        return parsed


TIME = Time()


class Finite(click.FloatRange):
    """A number within the range, and finite: click's range lets ``nan`` through (it compares
    false with both ends), which the API then refused with exit 1, not as the usage error it
    is (exit 2; ADR 0141)."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        """Parse ``value`` and check it is finite and in range."""
        number = super().convert(value, param, ctx)
        if not math.isfinite(number):
            self.fail(f"{value!r} is not a finite number.", param, ctx)
        return number


def as_of_option(f: F) -> F:
    """Add ``--as-of TIME``: evaluate salience and decay as of that time (default now)."""
    return click.option(
        "--as-of",
        type=TIME,
        default=None,
        help="Evaluate as of this time: ISO-8601 with zone, or now.",
    )(f)


def renamed_option(old: str, new: str, dest: str, **kwargs: Any) -> Callable[[F], F]:
    """Keep ``old`` working as a hidden, deprecated spelling of the option ``new`` (ADR 0069).

    The value lands in ``dest`` for the command to merge with the new option's; when it is
    given, one deprecation line goes to stderr. Kept for one release.
    """

    def warn(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
        if value not in (None, ()):
            click.echo(f"warning: {old} is deprecated, use {new} instead", err=True)
        return value

    return click.option(old, dest, hidden=True, callback=warn, expose_value=True, **kwargs)


def one_of_renamed(new_value: Any, old_value: Any, old: str, new: str) -> Any:
    """Return the value given by ``new`` or by its deprecated spelling ``old``; both is an error."""
    if new_value not in (None, ()) and old_value not in (None, ()):
        raise click.UsageError(f"give {new} only ({old} is its deprecated spelling)")
    return new_value if new_value not in (None, ()) else old_value
