"""The package's layers, read from its source with ast (nothing is imported, so an import inside a function counts as
much as one at the top of a module: it runs as surely, only later).

The units (a top-level module of the package, or a subpackage: harness.run.engine belongs to harness.run) sit on the
layers LAYERS declares, bottom first; docs/architecture.md draws them. A module imports only from its own layer or one
below, never up; the units import each other without a circle, and so do the modules of each unit (with the units
acyclic, no circle of modules is left anywhere). A unit that is on no layer (a new module) fails until it is placed.

The command line (harness/cli/) is the top layer: nothing in the package imports it but harness/__main__.py (and the
console script, pyproject.toml's `harness.cli:entry`, which is no module). A module below that imports it, even to
reach one helper, makes a circle (the CLI imports everything), which is how `bench` once sat in harness/timing/cli.py
with the top-level parser adding it and it calling back into harness.cli.main. The pytest plugin sits beside the
command line: it takes the sweep's selection flags from harness/plan.py, not from the CLI's parser.

The checks run on any tree (`graph(root)`), so the planted tests put the imports they exist to catch in a tree of
their own and see each reported.
"""
from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "harness"
CLI = "harness.cli"
MAY_IMPORT_THE_CLI = {"harness.__main__"}  # `python -m harness`: the command line's own process

# bottom first; a unit may import its own layer's units and those below (docs/architecture.md, "The layers")
LAYERS = [
    # the vocabulary and the caches: the package's version, the enums, the cache folder and its primitives
    # (digests, locks, atomic writes, arrays files), the CUDA headers every kernel shares, the declared CI environments
    {"harness", "harness.enums", "harness.cache", "harness.kernels", "harness.environments"},
    # what a family gives the engine and gets back (Kernel, Family, LaunchInput, SassCheck, case records), and the
    # registry that finds a family by name (by its module's name: it imports none)
    {"harness.contract", "harness.registry"},
    {"harness.spec"},  # the PTX ISA as numpy models
    {"harness.diagnosis"},  # the shared diagnosis kit: affine maps, address fits, bitmaps, digits, words, pictures
    {"harness.families"},  # each family whole: forms, cases, reference, kernel and template, readback, probes
    {"harness.api", "harness.tap"},  # the library over the models and the families, no GPU
    {"harness.run"},  # the engine: compile, SASS check, toolchains, GPU workers, launches; knows no family
    {"harness.plan", "harness.levels"},  # what a sweep runs: every family's plan, selected, sharded, levelled
    {"harness.records"},  # results files and their readers: merge, compare, report, junit, bundle, fleet
    {"harness.sweep", "harness.progress", "harness.timing", "harness.experiments", "harness.doctor"},
    {"harness.cli", "harness.pytest_plugin", "harness.__main__"},  # the command line and the pytest plugin
]


def module_of(path: Path, root: Path) -> str:
    """harness/cli/sweep.py -> harness.cli.sweep; harness/cli/__init__.py -> harness.cli (root: the package folder)."""
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported(tree: ast.AST, module: str, is_package: bool, known: set[str]) -> set[str]:
    """The package's modules that a module imports anywhere in its source. `from a.b import c` is a.b.c where c is a
    module of the package, a.b otherwise (a name defined in a.b); relative imports are resolved against the module's
    package."""
    top = module.split(".")[0]
    here = module if is_package else module.rpartition(".")[0]
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = here.split(".")
                anchor = anchor[:len(anchor) - (node.level - 1)]
                base = ".".join(anchor + ([base] if base else []))
            for a in node.names:
                found.add(f"{base}.{a.name}" if f"{base}.{a.name}" in known else base)
    return {m for m in found if m == top or m.startswith(top + ".")}


def graph(root: Path = PACKAGE) -> dict[str, set[str]]:
    """module -> the package's modules it imports, for every module under root."""
    paths = {module_of(p, root): p for p in sorted(root.rglob("*.py")) if "__pycache__" not in p.parts}
    known = set(paths)
    return {m: imported(ast.parse(p.read_text(), str(p)), m, p.name == "__init__.py", known) - {m}
            for m, p in paths.items()}


def inside(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def importers_of_the_cli(g: dict[str, set[str]]) -> dict[str, list[str]]:
    """Modules outside harness/cli/ (harness/__main__.py aside) that import it, with what they import of it."""
    return {m: sorted(d for d in deps if inside(d, CLI)) for m, deps in g.items()
            if not inside(m, CLI) and m not in MAY_IMPORT_THE_CLI and any(inside(d, CLI) for d in deps)}


def unit_of(module: str) -> str:
    """The layer a module belongs to: a top-level module of the package, or a subpackage (harness.timing.bench ->
    harness.timing)."""
    return ".".join(module.split(".")[:2])


def reachable(g: dict[str, set[str]], start: str) -> set[str]:
    seen, todo = set(), [start]
    while todo:
        for d in g.get(todo.pop(), ()):
            if d not in seen:
                seen.add(d)
                todo.append(d)
    return seen


def units(g: dict[str, set[str]]) -> dict[str, set[str]]:
    """The graph with modules folded into their layers."""
    out: dict[str, set[str]] = {}
    for m, deps in g.items():
        out.setdefault(unit_of(m), set()).update(unit_of(d) for d in deps if unit_of(d) != unit_of(m))
    return out


def circles_through(g: dict[str, set[str]], node: str) -> list[str]:
    """The nodes that node reaches and that reach node back (each one makes a circle with it)."""
    return sorted(d for d in reachable(g, node) if d != node and node in reachable(g, d))


def circle_inside(g: dict[str, set[str]], package: str) -> list[str]:
    """The modules of a package that reach themselves through the package's own modules."""
    sub = {m: {d for d in deps if inside(d, package)} for m, deps in g.items() if inside(m, package)}
    return sorted(m for m in sub if m in reachable(sub, m))


def layer_of(layers: list[set[str]]) -> dict[str, int]:
    return {u: i for i, layer in enumerate(layers) for u in layer}


def unplaced(g: dict[str, set[str]], layers: list[set[str]]) -> list[str]:
    """Units of the package that are on no layer."""
    return sorted({unit_of(m) for m in g} - set(layer_of(layers)))


def upward(g: dict[str, set[str]], layers: list[set[str]]) -> list[str]:
    """'module -> imported module' for every import that runs up to a higher layer than the importer's."""
    at = layer_of(layers)
    return sorted(f"{m} -> {d}" for m, deps in g.items() for d in deps
                  if unit_of(m) in at and unit_of(d) in at and at[unit_of(d)] > at[unit_of(m)])


def unit_circles(g: dict[str, set[str]]) -> list[str]:
    """The units that reach themselves through other units."""
    u = units(g)
    return sorted(n for n in u if n in reachable(u, n))


def module_circles(g: dict[str, set[str]]) -> dict[str, list[str]]:
    """unit -> the modules of it that reach themselves through its own modules (units with none left out)."""
    out = {}
    for unit in sorted({unit_of(m) for m in g}):
        sub = {m: {d for d in deps if unit_of(d) == unit} for m, deps in g.items() if unit_of(m) == unit}
        found = sorted(m for m in sub if m in reachable(sub, m))
        if found:
            out[unit] = found
    return out


def test_every_unit_is_on_one_layer_and_every_layer_names_units_that_exist():
    g = graph()
    placed = [u for layer in LAYERS for u in layer]
    assert len(placed) == len(set(placed)), "a unit is on two layers"
    assert unplaced(g, LAYERS) == [], "place the new unit on a layer of LAYERS (and in docs/architecture.md)"
    assert set(placed) <= {unit_of(m) for m in g}, "LAYERS names a unit that is gone"


def test_the_architecture_document_draws_these_layers():
    """docs/architecture.md's "The layers" diagram, top first, one layer a line: its units, then what the layer is."""
    import re
    text = (PACKAGE.parent / "docs" / "architecture.md").read_text()
    block = text.split("## The layers", 1)[1].split("```", 2)[1]
    drawn = [re.split(r"\s{2,}", line.strip())[:-1] for line in block.strip().splitlines()]
    assert [{u if u == "harness" else f"harness.{u}" for u in layer} for layer in reversed(drawn)] == LAYERS


def test_no_import_runs_up_a_layer():
    assert upward(graph(), LAYERS) == []


def test_no_circle_between_units_or_between_the_modules_of_one_unit():
    g = graph()
    assert unit_circles(g) == []
    assert module_circles(g) == {}


def test_the_engine_and_the_families_meet_only_in_the_contract():
    """Nothing in run/ imports a family (it finds them through harness/registry.py), and no family imports the engine,
    the plan or the records (the layers say so too: this names the rule the contract exists for)."""
    g = graph()
    assert sorted(f"{m} -> {d}" for m, deps in g.items() if inside(m, "harness.run")
                  for d in deps if inside(d, "harness.families")) == []
    above = ("harness.run", "harness.plan", "harness.records", "harness.sweep")
    assert sorted(f"{m} -> {d}" for m, deps in g.items() if inside(m, "harness.families")
                  for d in deps if any(inside(d, a) for a in above)) == []
    assert {"harness.contract", "harness.registry"} <= {d for deps in g.values() for d in deps}


def planted_tree(tmp_path, files: dict[str, str]):
    """A package `harness` of the given files (path -> text) under tmp_path, for the checks to run on."""
    root = tmp_path / "harness"
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def test_the_layer_checks_catch_a_planted_import(tmp_path):
    """A tree of four units on three layers: a family importing the engine inside a function (as the families once
    compiled their probes' kernels), two modules of the engine importing each other (as compile.py and sass.py did),
    and two units of one layer importing each other, are each reported; removed, nothing is."""
    layers = [{"harness", "harness.contract"}, {"harness.families", "harness.spec"}, {"harness.run"}]
    files = {
        "__init__.py": "",
        "contract.py": "",
        "spec/__init__.py": "",
        "spec/layouts.py": "",
        "families/__init__.py": "",
        "families/wgmma.py": "from harness import contract\n"
                             "def probe():\n    from harness.run import compile\n    return compile\n",
        "run/__init__.py": "",
        "run/compile.py": "from harness.run import sass\nfrom harness.contract import Kernel\n",
        "run/sass.py": "from .compile import cache_dir\n",
        "run/engine.py": "from harness.families import wgmma\n",
    }
    root = planted_tree(tmp_path, files)
    g = graph(root)
    assert unplaced(g, layers) == []
    assert upward(g, layers) == ["harness.families.wgmma -> harness.run.compile"]
    assert unit_circles(g) == ["harness.families", "harness.run"]
    assert module_circles(g) == {"harness.run": ["harness.run.compile", "harness.run.sass"]}
    (root / "spec/layouts.py").write_text("from harness.families import wgmma\n")  # the same layer, one way: allowed
    (root / "families/wgmma.py").write_text("from harness.spec import layouts\n")  # and back: a circle
    g = graph(root)
    assert upward(g, layers) == [] and unit_circles(g) == ["harness.families", "harness.spec"]
    (root / "spec/layouts.py").write_text("")
    (root / "run/sass.py").write_text("from harness import contract\n")
    (root / "cli.py").write_text("")  # a unit on no layer
    g = graph(root)
    assert unplaced(g, layers) == ["harness.cli"]
    assert upward(g, layers) == [] and unit_circles(g) == [] and module_circles(g) == {}


def test_nothing_below_the_command_line_imports_it():
    assert importers_of_the_cli(graph()) == {}


def test_the_command_line_is_in_no_circle_and_timing_does_not_reach_it():
    u = units(graph())
    assert "harness.timing" in reachable(u, CLI)  # bench: the CLI imports timing, as it should
    assert CLI not in reachable(u, "harness.timing")
    assert circles_through(u, CLI) == []


def test_the_command_line_modules_import_each_other_without_a_circle():
    """The group modules take their shared helpers from harness/cli/common.py; harness/cli/__init__.py (which imports
    every group to build the parser) is imported by none of them."""
    g = graph()
    assert {"harness.cli.common", "harness.cli.sweep", "harness.cli.timing"} <= set(g)
    assert circle_inside(g, CLI) == []


def test_the_pytest_plugin_takes_the_selection_flags_from_the_plan():
    assert "harness.plan" in graph()["harness.pytest_plugin"]


def test_the_checks_catch_a_planted_import(tmp_path):
    """A tree with the imports these checks exist to catch: a lower module importing the CLI inside a function (as
    harness/timing/cli.py did), a relative one, a group module importing the CLI's __init__, and __main__'s, allowed."""
    files = {
        "__init__.py": "",
        "__main__.py": "from harness.cli import entry\n",
        "plan.py": "",
        "cli/__init__.py": "from harness.cli import common, sweep\nfrom harness.timing import bench\n",
        "cli/common.py": "import json\n",
        "cli/sweep.py": "from harness.cli import common\nfrom harness import plan\n",
        "timing/__init__.py": "",
        "timing/bench.py": "def main():\n    from harness.cli import main as harness_main\n    return harness_main()\n",
        "records/report.py": "from ..cli import common\n",
    }
    root = planted_tree(tmp_path, files)
    g = graph(root)
    assert importers_of_the_cli(g) == {"harness.timing.bench": ["harness.cli"],
                                       "harness.records.report": ["harness.cli.common"]}
    assert circles_through(units(g), CLI) == ["harness.timing"]
    assert circle_inside(g, CLI) == []
    (root / "cli/common.py").write_text("from harness.cli import COMMANDS\n")  # a group reaching up into __init__
    assert circle_inside(graph(root), CLI) == ["harness.cli", "harness.cli.common", "harness.cli.sweep"]
    (root / "timing/bench.py").write_text("")
    (root / "records/report.py").write_text("")
    (root / "cli/common.py").write_text("")
    g = graph(root)
    assert importers_of_the_cli(g) == {} and circles_through(units(g), CLI) == [] and circle_inside(g, CLI) == []
