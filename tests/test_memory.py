"""Native memory: an env stepped for a long time must not grow (issue: ~190 B per CenicFranka-v0 step).

The cause was eigenpy's ``Quaternion(R)`` constructor from a rotation matrix, which leaks 80 bytes per call
(eigenpy 3.13 / pinocchio 4.1; benchmarks/upstream_quaternion_leak.py); the envs converted two poses per
observation with it. cenic_gym.model.matrix_to_quat_xyzw is the non-leaking conversion everyone uses.
RSS is read after glibc's ``malloc_trim(0)`` (free heap pages go back to the OS), so what remains is live memory,
not allocator slack; per-step layers: benchmarks/memory_growth.py.
"""
import ctypes
import os
import sys

import gymnasium as gym
import numpy as np
import pinocchio as pin
import pytest

import cenic_gym  # noqa: F401  (registers the envs)
from cenic_gym.model import matrix_to_quat_xyzw, quat_xyzw_to_matrix


def _libc():
    try:
        return ctypes.CDLL("libc.so.6")
    except OSError:
        return None


LIBC = _libc()
linux_glibc = pytest.mark.skipif(not sys.platform.startswith("linux") or LIBC is None
                                 or not hasattr(LIBC, "malloc_trim"), reason="needs Linux /proc and glibc")


def trimmed_rss_bytes():
    """Resident set size [bytes] after malloc_trim(0)."""
    LIBC.malloc_trim(0)
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def growth_per_call(f, n, warmup):
    for _ in range(warmup):
        f()
    r0 = trimmed_rss_bytes()
    for _ in range(n):
        f()
    return (trimmed_rss_bytes() - r0) / n


def test_matrix_to_quat_xyzw_is_eigens_conversion_bit_for_bit():
    rng = np.random.default_rng(0)
    for _ in range(500):
        R = pin.exp3(rng.normal(size=3) * rng.uniform(0.0, 3.2))
        q = matrix_to_quat_xyzw(R)
        assert q.shape == (4,)
        assert np.array_equal(q, pin.Quaternion(R).coeffs())
        assert np.allclose(pin.Quaternion(q[3], q[0], q[1], q[2]).toRotationMatrix(), R, atol=1e-14)


def test_quat_xyzw_to_matrix_inverts_it_and_normalizes():
    rng = np.random.default_rng(1)
    for _ in range(500):
        R = pin.exp3(rng.normal(size=3) * rng.uniform(0.0, 3.2))
        q = matrix_to_quat_xyzw(R)
        assert np.allclose(quat_xyzw_to_matrix(q), R, atol=1e-14)
        assert np.allclose(quat_xyzw_to_matrix(-2.5 * q), R, atol=1e-14)  # either sign, any non-zero norm


@linux_glibc
def test_matrix_to_quat_xyzw_does_not_leak():
    R = pin.utils.rpyToMatrix(0.1, 0.2, 0.3)
    # the leaking constructor grows 80 B per call here; a fixed conversion stays at 0 (page granularity: 4 kB in
    # 40 000 calls is 0.1 B per call)
    assert growth_per_call(lambda: matrix_to_quat_xyzw(R), 40_000, 2_000) < 8.0


@linux_glibc
@pytest.mark.parametrize("env_id", ["CenicFranka-v0", "CenicSuction-v0"])
def test_env_observation_does_not_grow_native_memory(env_id):
    """An observation used to leak 160 B (two box/TCP quaternions); 20 000 observations then grew RSS by 3.2 MB.
    The bound (16 B per observation, 0.3 MB) is far under that and far over page-granularity noise."""
    env = gym.make(env_id).unwrapped
    env.reset(seed=0)
    assert growth_per_call(env._observe, 20_000, 1_000) < 16.0
    env.close()
