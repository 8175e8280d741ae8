"""Standalone repro for an upstream report (eigenpy / pinocchio): ``Quaternion(R)`` from a 3x3 rotation matrix leaks
native memory (80 bytes per call with eigenpy 3.13.0, pinocchio 4.1.0, Python 3.11, numpy 2, Linux x86-64).
Needs only numpy, pinocchio (which brings eigenpy) and Linux (/proc, glibc's malloc_trim).

    python benchmarks/upstream_quaternion_leak.py

Prints the resident-set growth per call after a warm-up, with glibc's free pages returned to the OS before each
reading (malloc_trim(0)), for the leaking constructor and for constructors and conversions that do not leak.
"""
import ctypes
import os

import eigenpy
import numpy as np
import pinocchio as pin

_LIBC = ctypes.CDLL("libc.so.6")
_PAGE = os.sysconf("SC_PAGE_SIZE")


def rss_bytes():
    """Resident set size [bytes] after malloc_trim(0)."""
    _LIBC.malloc_trim(0)
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * _PAGE


def growth_per_call(f, n=100_000, warmup=5_000):
    for _ in range(warmup):
        f()
    r0 = rss_bytes()
    for _ in range(n):
        f()
    return (rss_bytes() - r0) / n


def main():
    R = pin.utils.rpyToMatrix(0.1, 0.2, 0.3)
    c = pin.Quaternion(R).coeffs().copy()
    print(f"pinocchio {pin.__version__}, eigenpy {eigenpy.__version__}, numpy {np.__version__}")
    cases = {
        "pin.Quaternion(R)  (3x3 matrix)": lambda: pin.Quaternion(R),
        "eigenpy.Quaternion(R)": lambda: eigenpy.Quaternion(R),
        "pin.Quaternion(w, x, y, z)": lambda: pin.Quaternion(c[3], c[0], c[1], c[2]),
        "pin.Quaternion(coeffs (4,))": lambda: pin.Quaternion(c),
        "pin.SE3ToXYZQUAT(pin.SE3(R, 0))[3:]": lambda: pin.SE3ToXYZQUAT(pin.SE3(R, np.zeros(3)))[3:],
    }
    for name, f in cases.items():
        print(f"{name:40s} {growth_per_call(f):8.1f} bytes/call", flush=True)


if __name__ == "__main__":
    main()
