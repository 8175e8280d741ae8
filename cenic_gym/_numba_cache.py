"""Compiled-kernel cache that cannot go stale.

numba's ``cache=True`` validates a cached kernel by the source of the file that defines it only. A kernel that calls
a kernel of another module (``contact.find_contacts`` → ``narrowphase``, ``cenic`` → ``icf`` / ``solver``) or reads
another module's constant has that code compiled in, so after an edit of the other module, or an upgrade of the
package, numba silently loads the old machine code (numba issue #1833; ``tests/test_numba_cache.py`` reproduces it).

This module, imported by ``cenic_gym/__init__.py`` before any module with kernels, keys the cache of each module of
the package by :func:`module_key`: a hash of the sources of the module and of every package module it imports,
directly or not (``from .x import``, ``from . import x``; the only way a kernel can reach other code or constants),
and of the Python, numba, llvmlite and NumPy versions. Each key has its own directory, so any change that can reach
a kernel gives an empty directory and a fresh compile, while an edit of a module no kernel imports (``simulator``,
``cli``, ``env``, ``scenes``) recompiles nothing, and one of ``cenic.py`` recompiles only ``cenic``'s kernels. It
does so by a numba cache locator, :class:`PackageCacheLocator`, put first in numba's list; it claims only the
modules in this package's directory, so the numba caches of other code are untouched. (A module global assigned
at run time, not in the source, is still frozen into the kernels compiled after it: numba's rule for globals.)

Where (:func:`cache_root`): ``$NUMBA_CACHE_DIR/cenic_gym/`` if the user sets ``NUMBA_CACHE_DIR``, else
``$XDG_CACHE_HOME/cenic_gym/numba/`` (``~/.cache/cenic_gym/numba/``), one directory ``<module>-<key>`` per module
state in it; if it is not writable, the same under the system temporary directory. Directories of other states not
used for :data:`PRUNE_AFTER_DAYS` days are deleted at import.

Sharing: the directories depend on the sources and versions only, not on where the package is installed, so all
processes on one machine that run the same code (Ray workers, subprocesses, a virtual environment with the same
release) share one compiled cache; numba writes cache files atomically (temporary file, then rename), so
concurrent writers are safe. Processes that start together on a cold cache each compile (there is no lock): run one
short simulation in the driver first to pay the compile once. numba keys each entry by the CPU too, so a home
directory shared by different machines is safe.

Setting ``NUMBA_CACHE_LOCATOR_CLASSES`` replaces numba's locator list and bypasses this module unless it names
``cenic_gym._numba_cache.PackageCacheLocator`` first.
"""
from __future__ import annotations

import functools
import getpass
import hashlib
import os
import re
import shutil
import sys
import tempfile
import time
import warnings

import llvmlite
import numba
import numpy
from numba.core import caching, config

PACKAGE_DIR = os.path.dirname(os.path.realpath(__file__))
PACKAGE = __name__.rpartition(".")[0]
PRUNE_AFTER_DAYS = 30
VERSIONS = "\0".join((sys.version, numba.__version__, llvmlite.__version__, numpy.__version__))
# the module whose cache tells a cold start (every simulation runs its kernels) and what that costs: the cold
# first runs of an env in benchmarks/compile_time.py and docs/performance.md "Targets" (2-core VMs: 62-69 s on an
# Intel Xeon and 70-83 s on an AMD Zen 5 before 668f6f4, 125-155 s on an AMD Zen 3 host after it)
COLD_PROBE = "cenic"
COLD_COMPILE = "1-3 minutes"
_DIR_NAME = re.compile(r"\w+-[0-9a-f]{16}")
# `from .x import ...`, `from . import x, y`, `from <package>[.x] import ...`, `import <package>.x`
_IMPORT = re.compile(rf"^[ \t]*(?:from[ \t]+(?:\.|{PACKAGE}\b\.?)([\w.]*)[ \t]+import[ \t]+(\([^)]*\)|[^\n]*)"
                     rf"|import[ \t]+{PACKAGE}\.(\w+))", re.M)


@functools.lru_cache(maxsize=None)
def _sources():
    """{module name: source bytes} of the package's ``*.py`` files, read once: the sources this process imports."""
    out = {}
    for name in sorted(os.listdir(PACKAGE_DIR)):
        if name.endswith(".py"):
            with open(os.path.join(PACKAGE_DIR, name), "rb") as f:
                out[name[:-3]] = f.read()
    return out


def _imports(module):
    """The package modules that ``module``'s source imports (``__init__`` for names taken from the package)."""
    src, out = _sources(), set()
    for sub, names, direct in _IMPORT.findall(src[module].decode("utf-8", "replace")):
        if direct or sub:
            out.add((direct or sub).split(".")[0])
            continue
        for item in names.strip("()").split(","):
            name = item.split("#")[0].split()[:1]
            if name:
                out.add(name[0] if name[0] in src else "__init__")
    return out & set(src)


@functools.lru_cache(maxsize=None)
def module_key(module):
    """16 hex digits of sha256 over the sources of ``module`` and of all package modules it imports (transitively),
    and over :data:`VERSIONS`."""
    seen, todo = set(), [module]
    while todo:
        m = todo.pop()
        if m not in seen:
            seen.add(m)
            todo.extend(_imports(m))
    h = hashlib.sha256(VERSIONS.encode())
    for m in sorted(seen):
        h.update(b"\0" + m.encode() + b"\0" + _sources()[m])
    return h.hexdigest()[:16]


def cache_root(base=None):
    """The directory of the per-module cache directories: ``<base>/cenic_gym`` with ``base`` = the argument or
    ``NUMBA_CACHE_DIR`` (``numba.config.CACHE_DIR``), else ``$XDG_CACHE_HOME/cenic_gym/numba`` (``~/.cache``)."""
    base = base or config.CACHE_DIR
    if base:
        return os.path.join(os.path.abspath(base), "cenic_gym")
    xdg = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(xdg, "cenic_gym", "numba")


def _writable(path):
    try:
        os.makedirs(path, exist_ok=True)
        os.utime(path)  # marks it used (see prune)
        tempfile.TemporaryFile(dir=path).close()
        return True
    except OSError:
        return False


def _temp_root():
    try:
        user = getpass.getuser()
    except Exception:  # noqa: BLE001  (no user name in some containers)
        user = str(os.getuid()) if hasattr(os, "getuid") else "user"
    return os.path.join(tempfile.gettempdir(), f"cenic_gym-numba-{user}")


@functools.lru_cache(maxsize=None)
def cache_dir(module, base=None):
    """The cache directory of ``module``'s kernels, created: ``cache_root(base)/<module>-<module_key(module)>``, or
    the same under a per-user directory of the system temporary directory if that cannot be written (warning)."""
    name = f"{module}-{module_key(module)}"
    path = os.path.join(cache_root(base), name)
    if not _writable(path):
        fallback = os.path.join(_temp_root(), name)
        warnings.warn(f"{PACKAGE}: numba cache directory {path} is not writable; using {fallback}", stacklevel=2)
        path = fallback
        _writable(path)
    return path


def is_cold(module=COLD_PROBE, base=None):
    """Whether ``module``'s kernels have nothing compiled in the cache yet (a fresh install, an upgrade, an edit of
    the sources it reaches): numba writes one ``*.nbi`` index per cached kernel."""
    try:
        return not any(name.endswith(".nbi") for name in os.listdir(cache_dir(module, base)))
    except OSError:
        return True


_announced = False


def announce_compile(stream=None):
    """Before the first simulation of a process: if the integrator's kernels are not compiled yet, say so in one line
    (on stderr), since numba compiles them silently on first use. Once per process; nothing on a warm cache."""
    global _announced
    if _announced:
        return
    _announced = True
    if is_cold():
        print(f"{PACKAGE}: compiling the CENIC kernels once, {COLD_COMPILE}; cached in {cache_root()}",
              file=stream or sys.stderr, flush=True)


def prune(root=None, max_age_days=PRUNE_AFTER_DAYS):
    """Delete the ``<module>-<key>`` directories under ``root`` (default :func:`cache_root`) of states other than
    the current ones that were not used for ``max_age_days``. Returns the deleted paths."""
    root = root or cache_root()
    cutoff = time.time() - max_age_days * 86400.0
    removed = []
    try:
        entries = list(os.scandir(root))
    except OSError:
        return removed
    for e in entries:
        if not _DIR_NAME.fullmatch(e.name):
            continue
        try:
            old = e.is_dir(follow_symlinks=False) and e.stat(follow_symlinks=False).st_mtime < cutoff
        except OSError:
            continue
        module = e.name[:-17]
        if old and not (module in _sources() and e.name == f"{module}-{module_key(module)}"):
            shutil.rmtree(e.path, ignore_errors=True)
            removed.append(e.path)
    return removed


class PackageCacheLocator(caching._CacheLocator):
    """numba cache locator for the kernels of this package's modules: :func:`cache_dir` of the defining module
    (keyed by the sources it can reach, so never stale). Other files get ``None`` and go to numba's locators."""

    def __init__(self, py_func, module, py_file):
        self._py_file = py_file  # numba's warning for a kernel it cannot cache names the file
        self._lineno = py_func.__code__.co_firstlineno
        self._key = module_key(module)
        self._cache_path = cache_dir(module)

    def get_cache_path(self):
        return self._cache_path

    def get_source_stamp(self):
        return self._key  # the directory is already specific to the sources

    def get_disambiguator(self):
        return str(self._lineno)

    @classmethod
    def from_function(cls, py_func, py_file):
        directory, name = os.path.split(os.path.realpath(py_file))
        if directory != PACKAGE_DIR or name[:-3] not in _sources():
            return None
        return cls(py_func, name[:-3], py_file)


def install():
    """Put :class:`PackageCacheLocator` first in numba's locator list (once) and prune old cache directories."""
    locators = caching.FunctionCache._impl_class._locator_classes  # one list, shared by all numba cache kinds
    if not any(c.__name__ == PackageCacheLocator.__name__ and c.__module__ == __name__ for c in locators):
        locators.insert(0, PackageCacheLocator)
    prune()


install()
