"""Every command of README.md runs (issue 9, item 8: the README as a newcomer meets it).

``python`` blocks are executed as written, in order, each in a fresh namespace (every README block is a complete
program with its own imports) with a temporary directory as the working directory.

``bash`` blocks are split into commands (comments dropped, ``\\`` continuations joined); every command must match
:data:`SKIP` or :data:`RUN`, so a command added to the README without a test here fails this file:

* :data:`SKIP` (not run, and why): ``pip install`` (the environment running the tests *is* that install) and
  ``pytest`` (the suite that contains this file).
* :data:`RUN`: ``cenic-gym ...`` and ``python -m cenic_gym ...``, run as written in a temporary directory, except that
  ``demo`` gets ``--duration 0.1`` appended (argparse keeps the last value; the README's 2 s clutter run costs seconds
  more and adds nothing here); the plot must appear where the command line says. The repository's ``training/``
  folder is linked into that directory, so commands naming a shipped policy (``training/policies/...``) find it.

Runtime with a warm numba cache: ~15 s on 2 cores (Go1 example: model build + 1 s simulated, ~2 s; each command a
process start, ~2-3 s).
"""
from __future__ import annotations

import argparse
import ast
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

README = Path(__file__).resolve().parent.parent / "README.md"
DEMO_DURATION = "0.1"  # [s] appended to README `demo` command lines
COMMAND_TIMEOUT = 300  # [s] per command: generous for a cold numba cache (~90 s compile on a busy 2-core machine)

SKIP = {  # command prefix (tokens) -> why it is not run here
    ("pip", "install"): "installs the package; the environment running this test is that install",
    ("python", "-m", "pip", "install"): "installs the package; the environment running this test is that install",
    ("pytest",): "runs the test suite this file belongs to",
    ("python", "-m", "pytest"): "runs the test suite this file belongs to",
    ("cenic-gym", "train"): "trains for minutes; tests/test_training.py runs the same code on a few thousand steps",
    ("cenic-gym", "eval"): "needs the checkpoint of a training run; tests/test_training.py evaluates its own",
    ("ray", "start"): "starts a Ray node; tests/test_vector_cluster.py runs a two-node cluster",
}
RUN = (("cenic-gym",), ("python", "-m", "cenic_gym"))  # command prefixes run by test_bash_command


def _blocks(lang):
    """(line number, code) of every ```lang fenced block of the README."""
    text = README.read_text(encoding="utf-8")
    out = []
    for m in re.finditer(r"^```(\w*)[ \t]*\n(.*?)^```[ \t]*$", text, flags=re.M | re.S):
        if m.group(1) == lang:
            out.append((text.count("\n", 0, m.start()) + 2, m.group(2)))
    return out


def _commands():
    """(line number, tokens) of every command in the README's bash blocks."""
    out = []
    for line0, code in _blocks("bash"):
        lines = code.splitlines()
        i = 0
        while i < len(lines):
            start, cmd = i, lines[i]
            while cmd.rstrip().endswith("\\") and i + 1 < len(lines):
                i += 1
                cmd = cmd.rstrip()[:-1] + " " + lines[i]
            tokens = shlex.split(cmd, comments=True)
            if tokens:
                out.append((line0 + start, tokens))
            i += 1
    return out


def _match(tokens, prefixes):
    return next((p for p in prefixes if tuple(tokens[:len(p)]) == p), None)


PYTHON_BLOCKS = _blocks("python")
COMMANDS = _commands()


def test_readme_has_examples_and_commands():
    assert len(PYTHON_BLOCKS) >= 2, "README.md: expected the engine and robot examples as ```python blocks"
    assert any(_match(t, RUN) for _, t in COMMANDS), "README.md: expected cenic-gym commands in ```bash blocks"


@pytest.mark.parametrize("line,code", PYTHON_BLOCKS, ids=[f"README.md:{n}" for n, _ in PYTHON_BLOCKS])
def test_python_block(line, code, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    tree = ast.parse(code, filename=f"README.md:{line}")
    assigned = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    shadowing = sorted(assigned & set(sys.stdlib_module_names))
    assert not shadowing, f"README.md:{line}: variables named like standard modules {shadowing}"
    # the code is compiled with its README line numbers, so a traceback points into README.md
    exec(compile(ast.increment_lineno(tree, line - 1), f"README.md:{line}", "exec"), {"__name__": "__readme__"})


def _executable(tokens):
    """The README's command as an argv for this environment: `cenic-gym` -> the console script installed next to
    this interpreter (else on PATH); `python` -> this interpreter."""
    if tokens[0] == "python":
        return [sys.executable] + tokens[1:]
    script = Path(sys.executable).with_name(tokens[0])
    if not script.is_file():
        found = shutil.which(tokens[0])
        assert found, f"console script {tokens[0]!r} not found: is the package installed (pip install -e .)?"
        script = Path(found)
    return [str(script)] + tokens[1:]


@pytest.mark.parametrize("line,tokens", COMMANDS, ids=[f"README.md:{n}:{' '.join(t)}" for n, t in COMMANDS])
def test_bash_command(line, tokens, tmp_path):
    skip = _match(tokens, SKIP)
    if skip:
        pytest.skip(f"README.md:{line}: {' '.join(tokens)}: {SKIP[skip]}")
    prefix = _match(tokens, RUN)
    assert prefix, (f"README.md:{line}: {' '.join(tokens)!r} is neither run nor skipped by tests/test_readme.py: "
                    "add it to RUN or SKIP")
    args = list(tokens[len(prefix):])
    argv = _executable(tokens)
    is_demo = bool(args) and args[0] == "demo" and not {"-h", "--help"} & set(args)
    if is_demo:
        argv += ["--duration", DEMO_DURATION]
    (tmp_path / "training").symlink_to(README.parent / "training")  # commands name the shipped policies by path
    r = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, timeout=COMMAND_TIMEOUT)
    assert r.returncode == 0, f"README.md:{line}: {' '.join(argv)} exited {r.returncode}:\n{r.stdout}\n{r.stderr}"
    assert r.stdout.strip(), f"README.md:{line}: {' '.join(argv)} printed nothing"
    if is_demo:
        out = "cenic_demo.png"
        for i, a in enumerate(args):
            if a == "--out":
                out = args[i + 1]
            elif a.startswith("--out="):
                out = a.split("=", 1)[1]
        assert (tmp_path / out).is_file(), f"README.md:{line}: the plot {out} was not written\n{r.stdout}"
        assert f"{float(DEMO_DURATION):g} s simulated" in r.stdout, r.stdout


def _documented_words():
    return {w for _, tokens in COMMANDS if _match(tokens, RUN) for w in tokens}


def test_every_cli_command_and_option_is_in_the_readme():
    """`cenic-gym scenes` was undocumented: each subcommand, each demo option and --version appear in a README command."""
    from cenic_gym.cli import build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    words = _documented_words()
    missing = [name for name in sub.choices if name not in words]
    missing += [opt for opt in ("--version",) if opt not in words]
    for action in sub.choices["demo"]._actions:
        long = [o for o in action.option_strings if o.startswith("--") and o != "--help"]
        if long and not any(o in words for o in long):
            missing.append(f"demo {long[0]}")
    assert not missing, f"README.md has no command showing {missing}"
