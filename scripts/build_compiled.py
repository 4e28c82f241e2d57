"""Compile the loop's hot modules with mypyc, in place: an experiment, not how Endstate installs.

    python scripts/build_compiled.py                 # compile HOT in this checkout
    python scripts/build_compiled.py --root DIR      # ... in another copy (e.g. a `git archive`)
    python scripts/build_compiled.py --clean         # remove the compiled modules again

Needs mypy (with mypyc: the dev extra), a C compiler and the Python headers. Each compiled
module is an extension (`agent/_loop.cpython-311-*.so`) beside its `.py`, which Python
imports instead of the source; one shared library at the root holds the compiled code.
`--clean` deletes those files, and the checkout is pure Python again. Nothing here is wired
into pyproject.toml or CI; benchmarks/README.md ("A compiled core") says what it measured.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

# The modules a plain turn runs through that compile and import unchanged (one shared library),
# as measured in benchmarks/README.md. Each of these breaks compiled as the code stands (a plain
# `@dataclass` or class becomes a native class: no `__dict__`, no interpreted subclass, no
# attribute set from outside):
#   agent/budget.py      `vars(Spent())` in agent/snapshot.py fails at import; `Budget`'s `cached`
#   agent/usage.py       `RunResult(WithUsage)`: an interpreted class cannot inherit a compiled one
#   agent/hooks.py       `RunObserver`: tests, integrations and users subclass it
#   agent/stops.py       `vars(PendingAction)` in the codec and the stores (read, not run)
#   agent/tools.py       `Tool.signature` (`cached`) is read-only on a native class
#   agent/models/base.py refused by mypyc: `_CutCalls(list[ModelReply])` inherits a builtin
#   telemetry/export.py  `on_end = _CountedQueue._offer` borrows another class's method: every
#                        span end raises TypeError (logged), and a turn costs 2-3x
HOT = (
    "agent/_loop.py",
    "agent/_state.py",
    "agent/progress.py",
    "agent/journal.py",
    "telemetry/observer.py",
    "telemetry/tracing.py",
    "telemetry/metrics.py",
)


def compiled_files(root: Path) -> list[Path]:
    """The extension modules a build left in `root` (the shared library and one per module)."""
    return sorted(path for package in ("agent", "telemetry") for path in (root / package).rglob("*.so"))


def clean(root: Path) -> None:
    for path in compiled_files(root):
        path.unlink()
        print(f"removed {path.relative_to(root)}")


def build(root: Path, modules: list[str]) -> None:
    """`mypycify` the modules and build them in place, the C sources in a temporary directory."""
    from mypyc.build import mypycify  # the dev extra's mypy; imported here so --clean needs none
    from setuptools import setup

    missing = [m for m in modules if not (root / m).is_file()]
    if missing:
        raise SystemExit(f"no such module under {root}: {', '.join(missing)} (paths like agent/_loop.py)")
    os.chdir(root)  # mypyc reads pyproject.toml's [tool.mypy] from here, and names modules by path
    with tempfile.TemporaryDirectory(prefix="endstate-mypyc-") as temp:
        c_dir = str(Path(temp) / "c")
        # the shared library inside the package (agent/_core__mypyc...so), importable wherever agent is
        extensions = mypycify(modules, opt_level="3", target_dir=c_dir, group_name="agent._core")
        setup(
            name="endstate-compiled-core",
            ext_modules=extensions,
            script_args=["build_ext", "--inplace", "--build-temp", f"{temp}/o", "--build-lib", f"{temp}/lib"],
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("modules", nargs="*", default=list(HOT), help="module paths (default: the hot set)")
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parent.parent)
    parser.add_argument("--clean", action="store_true", help="remove the compiled modules")
    args = parser.parse_args(argv)
    root = args.root.resolve()
    clean(root)  # a module left compiled from an earlier set would shadow its source
    if not args.clean:
        build(root, args.modules)
    return 0


if __name__ == "__main__":
    sys.exit(main())
