"""The numba kernel cache cannot go stale (cenic_gym/_numba_cache.py).

numba's ``cache=True`` checks only the file that defines a kernel (numba issue #1833): ``cenic.contact_forces``
calls ``icf.contact_impulse`` (compiled in), so after an edit of icf.py plain numba loads the old contact_forces.
Each test copies the package to a temporary directory and runs three fresh interpreters on the copy, with a private
``NUMBA_CACHE_DIR``: (1) compile and cache, (2) after icf.py's friction regularization ε is scaled by 1000 (the
friction force changes), (3) after an edit of simulator.py, which no kernel module imports (the cache is used). A
pair of small kernels: ~2 s a compile.
"""
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import cenic_gym

PROBE = r"""
import json, sys, numpy as np
import cenic_gym
from cenic_gym.cenic import contact_forces
from cenic_gym.icf import ContactPool
nc = sys.modules.get("cenic_gym._numba_cache")  # absent in the plain-numba copy
cold = nc.is_cold() if nc else None  # before anything is compiled or loaded
# one sliding contact: v_c = (0.3, 0, -0.1) m/s, normal +z; the friction force depends on ε
one, ones = np.ones(1), np.ones((1, 3))
force, slip = np.zeros((1, 3)), np.zeros(1)
pool = ContactPool(np.eye(3)[None], np.array([[0, 1, 2]]), np.array([3]), ones * [0, 0, 1], -1e-3 * one, 1e5 * one,
                   10.0 * one, 0.5 * one, 100.0 * one, one, 1)
contact_forces(np.array([0.3, 0.0, -0.1]), pool, 1e-4, 1e-3, force, slip)
st = contact_forces.stats
print(json.dumps({"file": cenic_gym.__file__, "force": force[0].tolist(), "hits": sum(st.cache_hits.values()),
                  "misses": sum(st.cache_misses.values()), "cold": cold}))
"""


def _copy_package(tmp_path, plain):
    """``tmp_path/src/cenic_gym``, without caches; ``plain``: without the _numba_cache import (plain numba caching)."""
    src = Path(cenic_gym.__file__).parent
    dst = tmp_path / "src" / "cenic_gym"
    shutil.copytree(src, dst, ignore=shutil.ignore_patterns("__pycache__", "*.nbi", "*.nbc"))
    if plain:
        init = dst / "__init__.py"
        text = init.read_text()
        lines = [ln for ln in text.splitlines(keepends=True) if not ln.startswith("from . import _numba_cache")]
        assert len(lines) == text.count("\n") - 1, "cenic_gym/__init__.py no longer imports _numba_cache"
        init.write_text("".join(lines))
    return dst


def _run(tmp_path, pkg):
    env = dict(os.environ, PYTHONPATH=str(pkg.parent), NUMBA_CACHE_DIR=str(tmp_path / "numba_cache"),
               NUMBA_NUM_THREADS="1", OMP_NUM_THREADS="1")
    out = subprocess.run([sys.executable, "-c", PROBE], cwd=tmp_path, env=env, capture_output=True, text=True,
                         timeout=600)
    assert out.returncode == 0, out.stderr
    res = json.loads(out.stdout.strip().splitlines()[-1])
    assert Path(res["file"]).parent == pkg, res["file"]  # the copy, not the installed package
    return res


def _edit_callee_and_rerun(tmp_path, plain):
    pkg = _copy_package(tmp_path, plain)
    first = _run(tmp_path, pkg)
    icf = (pkg / "icf.py").read_text()  # a change of the callee's module only
    assert icf.count("    eps = vs\n") == 1, "icf.contact_step_params no longer sets eps = vs"
    (pkg / "icf.py").write_text(icf.replace("    eps = vs\n", "    eps = 1000.0 * vs\n"))
    edited = _run(tmp_path, pkg)
    with open(pkg / "simulator.py", "a") as f:  # outside every kernel's imports
        f.write("\n# edited\n")
    return first, edited, _run(tmp_path, pkg)


def test_edit_of_a_callee_module_recompiles_the_caller(tmp_path):
    first, edited, again = _edit_callee_and_rerun(tmp_path, plain=False)
    assert first["misses"] >= 1 and first["hits"] == 0
    assert edited["misses"] >= 1 and edited["hits"] == 0, "compiled kernel of the old icf.py was loaded"
    assert edited["force"][0] != pytest.approx(first["force"][0], rel=1e-3)  # friction sees the new ε
    assert again["hits"] >= 1 and again["misses"] == 0 and again["force"] == edited["force"]  # kept
    assert (tmp_path / "numba_cache" / "cenic_gym").is_dir()  # under the user's NUMBA_CACHE_DIR
    # is_cold(), which decides the "compiling…" notice: cold on an empty cache and after an edit the integrator's
    # kernels reach, warm once they are compiled
    assert (first["cold"], edited["cold"], again["cold"]) == (True, True, False)


def test_cold_start_is_announced_once(monkeypatch, capsys):
    """The first Simulator of a process on a cold cache prints one line saying what is compiling and where it is
    cached (numba compiles silently for 1-3 minutes); a warm cache, or a second simulator, prints nothing."""
    from cenic_gym import _numba_cache as nc
    from cenic_gym.scenes import sphere_drop
    from cenic_gym.simulator import Simulator

    for cold, lines in ((True, 1), (False, 0)):
        monkeypatch.setattr(nc, "_announced", False)
        monkeypatch.setattr(nc, "is_cold", lambda cold=cold: cold)
        Simulator(sphere_drop())
        Simulator(sphere_drop())
        err = capsys.readouterr().err
        assert err.count(f"cenic_gym: compiling the CENIC kernels once, {nc.COLD_COMPILE}; cached in ") == lines, err
        assert (nc.cache_root() in err) == bool(lines)


@pytest.mark.slow
def test_plain_numba_cache_goes_stale(tmp_path):
    """The bug itself (numba issue #1833), without cenic_gym._numba_cache: the old caller is loaded silently."""
    first, edited, _ = _edit_callee_and_rerun(tmp_path, plain=True)
    if edited["misses"]:
        pytest.skip("this numba recompiles callers of changed modules (issue #1833 fixed): _numba_cache may go")
    assert edited["hits"] >= 1 and edited["force"] == first["force"]


def test_uncachable_kernel_warns_instead_of_crashing():
    """numba warns, naming the kernel's file, when a compiled kernel cannot be cached (lifted loops, dynamic
    globals; NUMBA_OPT=0 hit it); with our locator that warning raised AttributeError instead."""
    from types import SimpleNamespace

    from numba.core.caching import CompileResultCacheImpl
    from numba.core.errors import NumbaWarning

    from cenic_gym import icf
    from cenic_gym._numba_cache import PackageCacheLocator

    impl = CompileResultCacheImpl(icf._reg_f.py_func)
    assert isinstance(impl.locator, PackageCacheLocator)
    cres = SimpleNamespace(lifted=(), library=SimpleNamespace(has_dynamic_globals=True),
                           fndesc=SimpleNamespace(qualname="_reg_f"))
    with pytest.warns(NumbaWarning, match="Cannot cache compiled function") as record:
        assert impl.check_cachable(cres) is False
    assert record[0].filename == icf.__file__
