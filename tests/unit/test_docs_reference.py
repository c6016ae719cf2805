"""The docs' generated reference pages list every item the code has: each command and
option of the CLI, each configuration key, action, metric and ``spark.icefloe.*`` setting
(the generators: ``docs/hooks/reference.py``, called here as the site's build calls them)."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path
from types import ModuleType

import click
import markdown
import pytest

from icefloe.app.cli import cli
from icefloe.base.config.maintenance_policy import MaintenancePolicy
from icefloe.base.config.model import NOT_KEYS, Config, TablePolicy
from icefloe.optimizer.actions import REGISTRY
from icefloe.service.observe.metrics import METRICS

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]


def _hook() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "docs_reference", ROOT / "docs/hooks/reference.py"
    )
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


ref = _hook()


def _commands(
    group: click.Command, path: tuple[str, ...] = ()
) -> list[tuple[tuple[str, ...], click.Command]]:
    found = [(path, group)]
    if isinstance(group, click.Group):
        for name, sub in group.commands.items():
            found += _commands(sub, (*path, name))
    return found


def test_the_cli_page_lists_every_command_and_option() -> None:
    html = markdown.markdown(ref.cli_page(), extensions=["mkdocs-click", "attr_list", "tables"])
    for path, command in _commands(cli):
        assert " ".join(("icefloe", *path)) in html, path
        for param in command.params:
            if getattr(param, "hidden", False):  # mkdocs-click leaves hidden options out
                continue
            for opt in getattr(param, "opts", []):
                if opt.startswith("-"):
                    assert f"<code>{opt}</code>" in html, (path, opt)


def _leaves(model: type, prefix: str = "") -> set[str]:
    keys = set()
    for name, info in model.__pydantic_fields__.items():  # type: ignore[attr-defined]
        if model is Config and name in NOT_KEYS:
            continue
        if isinstance(info.annotation, type) and hasattr(info.annotation, "__pydantic_fields__"):
            keys |= _leaves(info.annotation, f"{prefix}{name}.")
        elif not (model is Config and name == "tables"):
            keys.add(f"{prefix}{name}")
    return keys


def test_the_configuration_page_lists_every_key_with_a_description() -> None:
    page = ref.config_page()
    keys = _leaves(Config)
    assert {f"defaults.{k}" for k in TablePolicy.__pydantic_fields__} - {
        "defaults.maintenance"
    } <= keys
    assert {f"defaults.maintenance.{k}" for k in MaintenancePolicy.__pydantic_fields__} <= keys
    listed = {k.path for k in ref.config_keys()}
    assert keys <= listed
    for key in ref.config_keys():
        assert key.description, f"{key.path} has no description (add it in the model)"
        assert f"| `{key.path}`<br>`{key.env}` |" in page
    assert "`tables.<namespace.table>`" in page


def test_the_actions_page_lists_every_registered_action_and_setting() -> None:
    page = ref.actions_page()
    for spec in REGISTRY:
        assert f"## `{spec.name}`" in page
        for setting in spec.settings:
            assert f"`maintenance.{setting.key}`" in page


def test_the_metrics_page_lists_every_metric() -> None:
    page = ref.metrics_page()
    rows = re.findall(r"^\| `(icefloe_[a-z_]+)` \|", page, re.M)
    assert rows == [m.sample for m in METRICS]


def test_the_sql_settings_page_lists_every_setting_the_extension_reads() -> None:
    java = "\n".join(p.read_text() for p in (ROOT / "jvm/src/main").rglob("*.java"))
    read = set(re.findall(r'"(spark\.icefloe\.[^"]+)"', java))
    settings = ref.sql_settings()
    assert {s.name for s in settings} == read
    page = ref.sql_settings_page()
    for s in settings:
        assert s.default and s.description
        assert f"| `{s.name}` | `{s.default}` |" in page


def test_a_sql_setting_without_a_default_is_refused() -> None:
    source = '/** Something. */\n  static final String X = "spark.icefloe.skew.x";'
    with pytest.raises(ValueError, match="names no default"):
        ref.sql_settings(source)
    ok = '/** Salt: {@code 3} ({@code 0}: never). */ static final String Y = "spark.icefloe.y";'
    assert ref.sql_settings(ok) == [ref.SqlSetting("spark.icefloe.y", "3", "Salt (`0`: never).")]


def test_no_generated_page_is_a_file_in_docs() -> None:
    for uri in ref.PAGES:
        assert not (ROOT / "docs" / uri).exists(), uri
    assert ref.BENCH_MARKER in (ROOT / "docs/benchmarks.md").read_text()
    bench = ref.bench_markdown()
    assert re.search(r"^### planner$", bench, re.M) and not re.search(r"^## ", bench, re.M)
