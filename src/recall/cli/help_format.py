"""How recall's commands show themselves in `--help`: the way a command line is written.

typer (0.29) prints a type beside every option, flags included, so `--json <bool>` and
`-h, --help <bool>` read as if they took a value; and it writes required arguments as `{file}` in
the usage line. Every command and group of `recall` is built from the classes here (through `App`,
a `typer.Typer` that makes its commands with them), which show:

- a flag with no value after it (`--json`, `--help`), an option that takes one with its type;
- an argument by its name in capitals, `FILE` (optional: `[FILE]`; repeatable: `FILE...`), in
  the usage line, the Arguments panel and the error for a missing one, as click and most tools do.

Only click's public hooks are used (`metavar`, `collect_usage_pieces`, `get_help_option`), so an
older typer, which already prints flags and arguments this way, prints the same.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, TypeVar

import typer
from typer.core import TyperCommand, TyperGroup

if TYPE_CHECKING:
    # typer 0.29 carries its own copy of click; its Context is what these hooks receive.
    from typer._click import Context, Parameter
    from typer.core import TyperOption

__all__ = ["App", "RecallCommand", "RecallGroup"]

Function = TypeVar("Function", bound=Callable[..., Any])


def _as_written(params: Iterable[Parameter]) -> None:
    """Flags show no value; arguments show their name in capitals (unless given a metavar)."""
    for param in params:
        if param.param_type_name == "option" and getattr(param, "is_flag", False):
            # typer shows an option's metavar in place of its type: a flag's value is nothing.
            param.metavar = ""
        elif param.param_type_name == "argument" and param.metavar is None and param.name:
            param.metavar = param.name.upper()


def _usage_name(param: Parameter) -> str:
    """An argument in the usage line: FILE, [FILE] when optional, FILE... when repeatable."""
    name = param.metavar or (param.name or "").upper()
    if not param.required:
        name = f"[{name}]"
    return f"{name}..." if param.nargs != 1 else name


class RecallCommand(TyperCommand):
    """A command whose help writes flags and arguments as a command line does."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        _as_written(self.params)

    def get_help_option(self, ctx: Context) -> TyperOption | None:
        option = super().get_help_option(ctx)
        if option is not None:
            _as_written([option])
        return option

    def collect_usage_pieces(self, ctx: Context) -> list[str]:
        # click's own loop, with typer's `{name}` for an argument replaced by NAME.
        pieces = [self.options_metavar] if self.options_metavar else []
        for param in self.get_params(ctx):
            if param.param_type_name == "argument":
                pieces.append(_usage_name(param))
            else:
                pieces.extend(param.get_usage_pieces(ctx))
        return pieces


class RecallGroup(TyperGroup):
    """A group (`recall`, `recall agent`, …) whose own options' help reads as RecallCommand's."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        _as_written(self.params)

    def get_help_option(self, ctx: Context) -> TyperOption | None:
        option = super().get_help_option(ctx)
        if option is not None:
            _as_written([option])
        return option


class App(typer.Typer):
    """`typer.Typer` for recall: the group is a RecallGroup and every command a RecallCommand."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**{"cls": RecallGroup, **kwargs})

    def command(self, name: str | None = None, **kwargs: Any) -> Callable[[Function], Function]:
        return super().command(name, **{"cls": RecallCommand, **kwargs})
