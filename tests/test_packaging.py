"""Packaging (issue 11): the wheel built from this checkout installs on its own and runs outside the checkout.

The repository keeps the tasks and scene files at the top level (``envs/``, ``assets/``) and pyproject.toml maps them
into the wheel as ``cenic_gym.envs`` and ``cenic_gym.assets``. The editable install used for development does not
exercise that mapping the way a wheel does, so these tests build a real wheel and use it from a fresh venv.

**Build** (offline, no network): ``pip wheel --no-deps --no-build-isolation --no-index`` with the running
interpreter's setuptools, from a copy of the checkout in a temporary directory (an in-tree build would write
``build/`` and ``cenic_gym.egg-info`` into the working tree, and a stale ``build/lib`` can leak deleted modules into
the wheel). Without build isolation pip does not check the build requirements, so the test checks them itself as a
PEP 517 frontend would: ``[build-system] requires`` plus the backend's ``get_requires_for_build_wheel()``; when the
environment does not satisfy them (e.g. Python 3.11's bundled setuptools 65.5 has no ``bdist_wheel`` without the
``wheel`` package) the tests are *skipped* with the missing requirement named, rather than fetching anything.

**Install**: ``python -m venv --system-site-packages --without-pip`` (the venv sees the current site-packages with
pin, numba, gymnasium, ...; its pip is the system one, visible through those site-packages, which saves ensurepip's
~5 s) and ``pip install --no-deps --no-index --ignore-installed <wheel>`` (``--ignore-installed``: pip does not look
at, let alone try to uninstall, the developer's cenic-gym in the system site-packages). When the test runs inside a
venv itself, ``--system-site-packages`` would expose the *base* interpreter's packages, not the running venv's, so a
``.pth`` file then adds the running environment's site-packages (after the new venv's own).

**Shadowing the editable install.** The system site-packages hold the editable install: ``__editable__.*.pth``
appends setuptools' ``_EditableFinder`` (a meta-path finder mapping ``cenic_gym``, ``cenic_gym.envs`` and
``cenic_gym.assets`` to /work/main) to ``sys.meta_path``. It sits *after* the regular ``PathFinder``, and the venv's
site-packages come before the system's on ``sys.path``, so ``import cenic_gym`` finds the venv's copy (checked: the
spec's origin is resolved while the finder is still present). But a module missing from the wheel (say
``cenic_gym/envs/franka_box.py``) would silently fall through to the editable finder and be imported from the
checkout. So the child (1) runs with ``python -I`` (isolated mode: no ``PYTHONPATH``, no user site, no current
directory or script directory on ``sys.path``; ``PYTHONNOUSERSITE`` alone would leave ``PYTHONPATH`` and the
current directory), from a working directory outside the repository, (2) removes every ``__editable__`` finder,
path hook and path placeholder before importing anything of ours — no uninstall needed — and (3) reports the file
of every ``cenic_gym*`` module it loaded; all must lie in the venv's site-packages, none in the checkout.

**Numba cache.** cenic_gym's kernels are ``@njit(cache=True)`` and their cache is keyed by the sources they can
reach and the library versions, not by where the package is installed (:mod:`cenic_gym._numba_cache`): a venv with
the same release shares one compiled cache with the checkout. The child runs with a private ``NUMBA_CACHE_DIR``
under the test's temporary directory (a real user's cache is never touched), seeded with a copy of the main
process's directories of the current module keys (``cache_root()/<module>-<key>``), which is what a user's second
environment on the same machine gets. A cold compile of the Franka env costs ~150 s on a busy 2-core machine; with
the seed the child compiles nothing it needs. Directories of other keys are not copied, so the seed can only save
time, never change the result. ``CENIC_TEST_COLD_NUMBA=1`` skips the seeding (to measure the cold compile).

Timings (build, venv + install, smoke run) are attached with ``record_property`` and printed (``pytest -s`` / ``-rP``).
"""
import importlib
import importlib.metadata
import json
import os
import shutil
import site
import subprocess
import sys
import textwrap
import time
import zipfile
from pathlib import Path

import pytest

try:
    import tomllib
except ImportError:  # Python 3.10
    try:
        import tomli as tomllib
    except ImportError:
        from pip._vendor import tomli as tomllib

try:
    from packaging.requirements import Requirement
except ImportError:
    from pip._vendor.packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
# package in the wheel -> directory in the repository ([tool.setuptools.package-dir])
PACKAGE_DIRS = PYPROJECT["tool"]["setuptools"]["package-dir"]
# not copied into the temporary build tree: VCS data, build outputs and caches (top level / anywhere)
COPY_IGNORE_TOP = {".git", "build", "dist", "out", ".whl", ".gl", ".benchmarks"}
COPY_IGNORE_ANY = shutil.ignore_patterns("__pycache__", "*.egg-info", ".pytest_cache", "*.nbi", "*.nbc", "*.pyc")
PIP_QUIET = ("--disable-pip-version-check", "--no-input", "--no-color")
SUBPROCESS_TIMEOUT = 1800  # [s] a cold numba compile on a loaded machine takes minutes


def _run(cmd, **kw):
    """Run a command; on failure, fail the test with its output."""
    r = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=SUBPROCESS_TIMEOUT, **kw)
    if r.returncode != 0:
        pytest.fail(f"command failed ({r.returncode}): {' '.join(map(str, cmd))}\n--- stdout\n{r.stdout[-6000:]}\n"
                    f"--- stderr\n{r.stderr[-6000:]}")
    return r


def _missing_build_requirements(src, tmp):
    """Build requirements (PEP 517: static ``requires`` + the backend's ``get_requires_for_build_wheel``) that the
    running environment does not satisfy; what ``--no-build-isolation`` relies on but pip does not check."""
    bs = tomllib.loads((src / "pyproject.toml").read_text())["build-system"]
    out = tmp / "build_requires.json"
    hook = ("import importlib, json, sys; backend, out = sys.argv[1:3]; "  # the hook rewrites sys.argv
            "json.dump(list(importlib.import_module(backend).get_requires_for_build_wheel()), open(out, 'w'))")
    _run([sys.executable, "-c", hook, bs["build-backend"], out], cwd=src)
    missing = []
    for spec in list(bs.get("requires", [])) + json.loads(out.read_text()):
        req = Requirement(spec)
        if req.marker is not None and not req.marker.evaluate():
            continue
        try:
            version = importlib.metadata.version(req.name)
        except importlib.metadata.PackageNotFoundError:
            missing.append(f"{spec} (not installed)")
            continue
        if not req.specifier.contains(version, prereleases=True):
            missing.append(f"{spec} (found {version})")
    return missing


def _report(record_property, name, seconds):
    record_property(name, round(seconds, 2))
    print(f"[packaging] {name}: {seconds:.1f} s")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    """(wheel path, build seconds): built offline from a copy of the checkout."""
    tmp = tmp_path_factory.mktemp("packaging_build")
    src = tmp / "src"
    shutil.copytree(ROOT, src, ignore=lambda d, names: set(COPY_IGNORE_ANY(d, names)) | (
        COPY_IGNORE_TOP.intersection(names) if Path(d) == ROOT else set()))
    missing = _missing_build_requirements(src, tmp)
    if missing:
        pytest.skip("this environment cannot build the wheel offline without build isolation; missing build "
                    f"requirements: {', '.join(missing)} (e.g. python -m pip install 'setuptools>=70.1')")
    t0 = time.perf_counter()
    _run([sys.executable, "-m", "pip", "wheel", *PIP_QUIET, "--no-deps", "--no-build-isolation", "--no-index",
          "-w", tmp / "dist", src], cwd=tmp)
    seconds = time.perf_counter() - t0
    wheels = sorted((tmp / "dist").glob("cenic_gym-*.whl"))
    assert len(wheels) == 1, wheels
    return wheels[0], seconds


def test_wheel_contents(wheel, record_property):
    """The wheel maps envs/ and assets/ into the package: cenic_gym/envs/*.py, cenic_gym/assets/*.urdf; nothing
    outside cenic_gym/ and its .dist-info (no top-level envs/, assets/, tests/)."""
    path, build_s = wheel
    _report(record_property, "wheel_build_s", build_s)
    assert build_s < 120, f"building the wheel took {build_s:.0f} s"
    names = set(zipfile.ZipFile(path).namelist())
    for required in ("cenic_gym/__init__.py", "cenic_gym/suction.py", "cenic_gym/envs/__init__.py",
                     "cenic_gym/envs/franka_box.py", "cenic_gym/envs/panda_constants.py",
                     "cenic_gym/assets/__init__.py"):
        assert required in names, f"{required} missing from {path.name}: {sorted(names)}"
    urdfs = sorted(p.name for p in (ROOT / "assets").glob("*.urdf"))
    assert urdfs, "no URDF in assets/"
    for name in urdfs:
        assert f"cenic_gym/assets/{name}" in names, f"assets/{name} missing from {path.name}"
    for name in (ROOT / "envs").glob("*.py"):
        assert f"cenic_gym/envs/{name.name}" in names, f"envs/{name.name} missing from {path.name}"
    dist_info = f"{path.name.split('-')[0]}-{path.name.split('-')[1]}.dist-info/"
    stray = sorted(n for n in names if not (n.startswith("cenic_gym/") or n.startswith(dist_info)))
    assert not stray, f"files outside the package in {path.name}: {stray}"


CHILD = textwrap.dedent('''
    """Run by the venv's python -I: use the installed cenic_gym only; write a JSON report to argv[1]."""
    import importlib.util, json, sys, sysconfig, time

    def is_editable(obj):
        return (getattr(obj, "__module__", None) or type(obj).__module__ or "").startswith("__editable__")

    rep = {"prefix": sys.prefix, "purelib": sysconfig.get_paths()["purelib"], "sys_path": list(sys.path)}
    rep["editable_finders"] = [repr(f) for f in sys.meta_path if is_editable(f)]
    # with the editable finder still installed: which copy does sys.path order pick?
    rep["spec_origin_with_editable_finder"] = importlib.util.find_spec("cenic_gym").origin
    sys.modules.pop("cenic_gym", None)
    sys.meta_path[:] = [f for f in sys.meta_path if not is_editable(f)]
    sys.path_hooks[:] = [h for h in sys.path_hooks if not is_editable(h)]
    sys.path[:] = [p for p in sys.path if not p.startswith("__editable__")]
    sys.path_importer_cache.clear()

    t0 = time.perf_counter()
    import importlib.metadata
    import gymnasium as gym
    import pinocchio as pin
    import cenic_gym
    import cenic_gym.suction
    t1 = time.perf_counter()
    env = gym.make("CenicFranka-v0")
    obs, info = env.reset(seed=0)
    rep["reset_obs_ok"] = bool(env.observation_space.contains(obs))
    t2 = time.perf_counter()
    obs, reward, terminated, truncated, info = env.step(env.action_space.sample())
    rep["step_obs_ok"] = bool(env.observation_space.contains(obs))
    rep["reward"] = float(reward)
    env.close()
    t3 = time.perf_counter()
    urdf = cenic_gym.suction.gripper_urdf_path()
    rep["urdf"] = str(urdf)
    rep["urdf_is_file"] = urdf.is_file()
    model = pin.buildModelFromUrdf(str(urdf))
    rep["urdf_joints"] = list(model.names)[1:]
    dist = importlib.metadata.distribution("cenic-gym")
    rep["dist_dir"] = str(dist.locate_file(""))
    rep["direct_url"] = dist.read_text("direct_url.json")
    rep["cenic_file"] = cenic_gym.__file__
    rep["modules"] = {k: getattr(m, "__file__", None) for k, m in sys.modules.items()
                      if k == "cenic_gym" or k.startswith("cenic_gym.")}
    rep["timings"] = {"import": t1 - t0, "make_reset": t2 - t1, "step": t3 - t2}
    json.dump(rep, open(sys.argv[1], "w"), indent=1)
''')


def _seed_numba_cache(cache_base):
    """Copy this process's cenic_gym kernel cache of the current sources (:func:`cenic_gym._numba_cache.cache_dir`
    of each module) under ``cache_base`` (the child's NUMBA_CACHE_DIR). Returns the number of files copied."""
    from cenic_gym import _numba_cache as nc

    n = 0
    for module in nc._sources():
        src, dst = Path(nc.cache_dir(module)), Path(nc.cache_dir(module, str(cache_base)))
        shutil.copytree(src, dst, dirs_exist_ok=True)
        n += sum(1 for f in dst.iterdir() if f.suffix in (".nbi", ".nbc"))
    return n


def test_installed_wheel_runs_outside_the_checkout(wheel, tmp_path, record_property):
    """In a fresh venv with the wheel installed, from a directory outside the checkout: ``gym.make`` +
    reset + step of CenicFranka-v0, and the suction gripper URDF loads from the installed assets; every cenic_gym
    module comes from the venv, none from the checkout (see the module docstring for the isolation)."""
    path, _ = wheel
    t0 = time.perf_counter()
    venv = tmp_path / "venv"
    _run([sys.executable, "-m", "venv", "--system-site-packages", "--without-pip", venv], cwd=tmp_path)
    py = venv / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    purelib = _run([py, "-I", "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                   cwd=tmp_path).stdout.strip()
    if sys.prefix != sys.base_prefix:  # running in a venv: expose *its* site-packages (after the new venv's own)
        lines = [f"import site; site.addsitedir({d!r})" for d in site.getsitepackages()]
        (Path(purelib) / "_cenic_test_outer_site.pth").write_text("\n".join(lines) + "\n")
    _run([py, "-I", "-m", "pip", "install", *PIP_QUIET, "--no-deps", "--no-index", "--ignore-installed", path],
         cwd=tmp_path)
    install_s = time.perf_counter() - t0
    _report(record_property, "venv_and_install_s", install_s)

    cache_root = tmp_path / "numba_cache"
    cache_root.mkdir()
    seeded = 0 if os.environ.get("CENIC_TEST_COLD_NUMBA") == "1" else _seed_numba_cache(cache_root)
    record_property("numba_cache_files_seeded", seeded)
    print(f"[packaging] numba cache files seeded: {seeded}")

    workdir = tmp_path / "elsewhere"  # not the checkout, not a parent of it
    workdir.mkdir()
    script, report = tmp_path / "child.py", tmp_path / "report.json"
    script.write_text(CHILD)
    env = dict(os.environ, NUMBA_CACHE_DIR=str(cache_root))
    t0 = time.perf_counter()
    _run([py, "-I", script, report], cwd=workdir, env=env)
    run_s = time.perf_counter() - t0
    _report(record_property, "smoke_run_s", run_s)
    rep = json.loads(report.read_text())
    print(f"[packaging] child timings: {json.dumps({k: round(v, 2) for k, v in rep['timings'].items()})}")

    site_dir = Path(rep["purelib"]).resolve()
    root = ROOT.resolve()

    def installed(p):
        p = Path(p).resolve()
        return p.is_relative_to(site_dir) and not p.is_relative_to(root)

    assert Path(rep["prefix"]).resolve() == venv.resolve()
    # sys.path order alone already picks the venv's copy over the editable finder (which is behind PathFinder)
    assert installed(rep["spec_origin_with_editable_finder"]), rep["spec_origin_with_editable_finder"]
    assert installed(rep["cenic_file"]), rep["cenic_file"]
    assert Path(rep["cenic_file"]).resolve() == site_dir / "cenic_gym" / "__init__.py"
    for name in ("cenic_gym.envs", "cenic_gym.envs.franka_box", "cenic_gym.envs.panda_constants",
                 "cenic_gym.assets", "cenic_gym.suction"):
        assert name in rep["modules"], f"{name} was not imported"
    outside = {k: f for k, f in rep["modules"].items() if f is not None and not installed(f)}
    assert not outside, f"modules not from the installed wheel: {outside}"
    assert rep["reset_obs_ok"] and rep["step_obs_ok"]
    # the shipped URDF, not a temporary file written by gripper_urdf_path()
    assert rep["urdf_is_file"]
    assert Path(rep["urdf"]).resolve() == site_dir / "cenic_gym" / "assets" / "suction_gripper_2x2.urdf"
    assert rep["urdf_joints"][:3] == ["x", "y", "z"] and "cup_0" in rep["urdf_joints"]
    assert Path(rep["dist_dir"]).resolve() == site_dir
    assert not json.loads(rep["direct_url"] or "{}").get("dir_info", {}).get("editable", False)
    assert (venv / "bin" / "cenic-gym").is_file() or os.name == "nt"  # the console script
