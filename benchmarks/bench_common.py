"""Helpers shared by the benchmark scripts (work_precision.py, suction.py, stiff_control.py, profile_scenes.py,
peers/run.py): machine / code / version lines of the generated reports, the numba warm-up, and the replacement of a
marked section of ``benchmarks/RESULTS.md``.

The scripts run as ``python benchmarks/<script>.py``, so this directory is on ``sys.path``; ``peers/run.py`` adds
it itself.
"""
from __future__ import annotations

import os
import platform
import re
import subprocess
import time
from importlib.metadata import version
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def cpu_model():
    """The ``lscpu`` model name (``platform.processor()`` / ``platform.machine()`` if lscpu is unavailable)."""
    model = platform.processor() or platform.machine() or "?"
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, timeout=5).stdout
        m = re.search(r"(?mi)^Model name:\s*(.+)$", out)
        if m:
            model = m.group(1).strip()
    except (OSError, subprocess.SubprocessError):
        pass
    return model


def machine_info():
    """``"<lscpu model name>, <os.cpu_count()> cores"``."""
    return f"{cpu_model()}, {os.cpu_count()} cores"


def threads():
    """``"NUMBA_NUM_THREADS=<value>, OMP_NUM_THREADS=<value>"`` (``unset`` for a missing variable)."""
    return ", ".join(f"{k}={os.environ.get(k, 'unset')}" for k in ("NUMBA_NUM_THREADS", "OMP_NUM_THREADS"))


def machine_line():
    """The text after ``- Machine: `` in the generated reports."""
    return f"{machine_info()} (`lscpu` model name, `os.cpu_count()`); {threads()}"


def git_rev():
    """Short HEAD, plus ``" + uncommitted changes in cenic_gym/"`` when ``cenic_gym/`` differs from it; ``"?"`` if
    git is unavailable."""
    try:
        rev = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                             cwd=REPO).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--", "cenic_gym"], capture_output=True, text=True,
                               cwd=REPO).stdout.strip()
    except OSError:
        return "?"
    return rev + (" + uncommitted changes in cenic_gym/" if dirty else "")


def versions(*packages):
    """``"Python 3.x.y, numba a.b, ..."``: each package is a distribution name, or ``(label, distribution)`` to print
    it under another name (e.g. ``("pinocchio (pin)", "pin")``); ``?`` for one that is not installed."""
    out = [f"Python {platform.python_version()}"]
    for pkg in packages:
        label, dist = pkg if isinstance(pkg, tuple) else (pkg, pkg)
        try:
            out.append(f"{label} {version(dist)}")
        except Exception:  # noqa: BLE001
            out.append(f"{label} ?")
    return ", ".join(out)


def warm_up():
    """Pay numba cache loading / compilation before anything is timed: 0.05 s of clutter, the sphere drop and the
    sliding incline at ε = 1e-3. Returns the wall seconds it took."""
    from cenic_gym import Simulator, scenes

    t0 = time.perf_counter()
    Simulator(scenes.clutter(), accuracy=1e-3).advance_to(0.05)
    Simulator(scenes.sphere_drop(), accuracy=1e-3).advance_to(0.05)
    Simulator(scenes.incline(20, 0.3), accuracy=1e-3).advance_to(0.05)
    return time.perf_counter() - t0


def markers(name):
    """The ``(begin, end)`` HTML comments that delimit a generated section of RESULTS.md."""
    return f"<!-- {name}:begin -->", f"<!-- {name}:end -->"


def replace_marked_section(text, name, body, heading=None):
    """Replace what lies between the ``name`` markers of ``text`` by ``body``; if the markers are absent, append
    ``heading`` (if given) and the markers with ``body`` at the end. The rest of ``text`` is kept verbatim."""
    begin, end = markers(name)
    block = f"{begin}\n{body.rstrip()}\n{end}"
    if begin in text and end in text:
        pre, rest = text.split(begin, 1)
        _, post = rest.split(end, 1)
        return pre + block + post
    return text.rstrip() + "\n\n" + (f"{heading}\n\n" if heading else "") + block + "\n"
