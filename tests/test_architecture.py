"""The house rules a reviewer would otherwise check by eye: apps import one way
(accounts <- extraction <- delivery, config wires them), nobody imports another app's
underscore names, and production code imports no test or development dependency.

bin/check runs import-linter with the same contracts (pyproject.toml); this walk also
covers imports inside functions, which are how a wrong-way import usually sneaks in."""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
APPS = ("accounts", "extraction", "delivery")
# What each app may import of the others: the layer below it, never the one above.
ALLOWED = {"accounts": set(), "extraction": {"accounts"}, "delivery": {"accounts", "extraction"}}
# config's modules that wire the apps together; every other config module is shared by them.
WIRING = {"config.urls", "config.asgi", "config.wsgi"}
DEVELOPMENT_ONLY = ("tests", "bench", "eval", "pytest", "playwright", "aiohttp")


@dataclass(frozen=True)
class WrongImport:
    where: str
    line: int
    imported: str
    why: str

    def __str__(self) -> str:
        return f"{self.where}:{self.line} imports {self.imported}: {self.why}"


def imports_of(source: str) -> Iterator[tuple[int, str, list[str]]]:
    """(line, module, names) for every import statement at any depth, in line order."""
    found: list[tuple[int, str, list[str]]] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name, []) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append((node.lineno, node.module, [alias.name for alias in node.names]))
    yield from sorted(found, key=lambda entry: entry[0])


def wrong_imports(module: str, source: str) -> Iterator[WrongImport]:
    top = module.split(".")[0]
    for line, imported, names in imports_of(source):
        target = imported.split(".")[0]
        if target in DEVELOPMENT_ONLY:
            yield WrongImport(module, line, imported, "production code imports a test or development dependency")
            continue
        if top in APPS and target in APPS and target != top and target not in ALLOWED[top]:
            yield WrongImport(module, line, imported, f"{top} is below {target}")
        if top in APPS and imported in WIRING:
            yield WrongImport(module, line, imported, "an app imports the wiring that imports it")
        if top == "config" and module not in WIRING and target in APPS:
            yield WrongImport(module, line, imported, "a shared config module imports an app")
        if target in (*APPS, "config") and target != top:
            private = [name for name in names if name.startswith("_")]
            if private or any(part.startswith("_") for part in imported.split(".")):
                yield WrongImport(module, line, imported, f"another package's private names {private or imported}")


def production_modules() -> Iterable[tuple[str, Path]]:
    for package in ("config", *APPS):
        for path in sorted((ROOT / package).rglob("*.py")):
            if "migrations" in path.parts:
                continue
            relative = path.relative_to(ROOT).with_suffix("")
            parts = relative.parts[:-1] if relative.name == "__init__" else relative.parts
            yield ".".join(parts), path


def test_production_code_imports_only_downwards_and_no_private_names():
    found = [str(wrong) for module, path in production_modules() for wrong in wrong_imports(module, path.read_text())]
    assert found == []


def test_the_walk_reports_each_kind_of_wrong_import():
    source = "\n".join(
        [
            "from delivery.scheduling import schedule_due_deliveries",
            "def later():",
            "    from accounts.admin_scoping import _cache",
            "    import tests.system",
            "from config.urls import urlpatterns",
        ]
    )
    found = [(wrong.line, wrong.why) for wrong in wrong_imports("extraction.execution.scheduler", source)]
    assert found == [
        (1, "extraction is below delivery"),
        (3, "another package's private names ['_cache']"),
        (4, "production code imports a test or development dependency"),
        (5, "an app imports the wiring that imports it"),
    ]


def test_a_shared_config_module_may_not_import_an_app():
    found = [wrong.why for wrong in wrong_imports("config.metrics", "from extraction.capacity import limiter\n")]
    assert found == ["a shared config module imports an app"]
