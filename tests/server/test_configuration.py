"""docs/configuration.md, the one reference a user has for `recall serve`'s settings (issue 24,
point 12), held to the loader: every setting it takes is there with its true default, nothing
else is, and its example file loads. And the loader refuses what it does not take."""

from __future__ import annotations

import re
import tomllib
from dataclasses import fields
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from recall.cli import app
from recall.errors import InvalidInputError
from recall.server.config import ENV_SETTINGS, KEY_FIELDS, SERVER_SETTINGS, ServerConfig, load_config
from recall.settings import Settings

DOC = Path(__file__).resolve().parents[2] / "docs" / "configuration.md"


def _table(heading: str) -> dict[str, list[str]]:
    """The rows of the first table under `heading`: the name in the first cell -> the other cells."""
    text = DOC.read_text(encoding="utf-8")
    start = text.index(f"\n{heading}\n")
    rows: dict[str, list[str]] = {}
    for line in text[start:].splitlines()[1:]:
        if rows and not line.startswith("|"):
            break
        match = re.fullmatch(r"\| `([A-Za-z_]+)` \|(.*)\|", line)
        if match:
            rows[match[1]] = [cell.strip() for cell in match[2].split("|")]
    return rows


def _default(cell: str) -> Any:
    """A default as the doc writes it: the TOML value in the cell's first `code` span."""
    return tomllib.loads(f"value = {re.search(r'`([^`]*)`', cell)[1]}")["value"]  # type: ignore[index]


def test_every_server_setting_is_documented_with_its_default_flag_and_variable() -> None:
    rows = _table("### `[server]`")
    assert list(rows) == list(SERVER_SETTINGS)
    defaults = ServerConfig()
    for name, (kind, default, flag, variable, what) in rows.items():
        assert _default(default) == getattr(defaults, name), name
        assert flag == f"`--{name.replace('_', '-')}`", name
        assert variable == (f"`RECALL_{name.upper()}`" if name in ENV_SETTINGS else "—"), name
        assert kind and what, name
    help_text = CliRunner().invoke(app, ["serve", "--help"], env={"COLUMNS": "200"}).output
    assert "recall docs configuration" in help_text  # the page ships with the package
    for name in rows:
        assert f"--{name.replace('_', '-')}" in help_text


def test_every_key_field_and_recall_setting_is_documented() -> None:
    assert list(_table("### `[[keys]]`")) == list(KEY_FIELDS)
    rows = _table("## recall's settings (environment only)")
    settings = Settings()
    assert list(rows) == [f"RECALL_{f.name.upper()}" for f in fields(Settings)]
    for f in fields(Settings):
        kind, default, what = rows[f"RECALL_{f.name.upper()}"]
        value = getattr(settings, f.name)
        if isinstance(value, str):
            assert default == (f"`{value}`" if value else "(none)"), f.name
        else:
            assert kind == ("integer" if isinstance(value, int) else "number"), f.name
            assert _default(default) == value, f.name


def test_the_example_file_loads_and_sets_every_setting(tmp_path: Path) -> None:
    text = DOC.read_text(encoding="utf-8")
    example = re.search(r"```toml\n(.*?)```", text, re.DOTALL)[1]  # type: ignore[index]
    path = tmp_path / "recall.toml"
    path.write_text(example, encoding="utf-8")
    assert set(tomllib.loads(example)["server"]) == set(SERVER_SETTINGS)
    config = load_config(path, environ={})
    assert (config.port, config.rate_limit, config.header_timeout) == (8765, 100, 10.0)
    assert [(k.tenant, k.agent, k.admin) for k in config.keys] == [
        ("acme", None, False),
        ("acme", "triage", False),
        ("ops", None, True),
    ]


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("[sever]\nport = 1\n", "unknown table [sever]"),
        ("[server]\nprot = 1\n", "unknown [server] setting 'prot'"),
        ('[[keys]]\nkey = "k"\ntenant = "t"\nagnet = "bot"\n', "unknown field 'agnet'"),
        ('[server]\nallow_unauthenticated_remote = "false"\n', "must be true or false"),
        ("server = 1\n", "must be a table"),
    ],
)
def test_the_loader_refuses_what_the_doc_does_not_list(tmp_path: Path, text: str, problem: str) -> None:
    path = tmp_path / "recall.toml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(InvalidInputError, match=re.escape(problem)):
        load_config(path, environ={})
