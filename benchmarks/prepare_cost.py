"""CPU time of one state evaluation (``CenicIntegrator._prepare``) and of its parts, per env (one thread).

    PYTHONPATH=<tree> NUMBA_NUM_THREADS=1 OMP_NUM_THREADS=1 python benchmarks/prepare_cost.py

For CenicQuadruped-v0, CenicAllegro-v0, CenicFranka-v0, CenicSuction-v0 after 5 random steps: best of 5 loops
(``time.thread_time``, which waiting for a core on a shared machine does not inflate) of
``ContactQuery.sync_joint_poses`` (the Python copy of Pinocchio's joint poses; 0 when the system has no joint left
for it), the numba ``prepare_kernel`` and the whole ``_prepare`` (2 Pinocchio calls + both + glue). Run it with
PYTHONPATH pointing at a before tree and an after tree alternately to compare them.
"""
import time, sys, numpy as np, gymnasium as gym, cenic_gym, os
import cenic_gym.cenic as cm
def T(f, n=5000):
    best = 1e9
    for _ in range(5):
        t0 = time.thread_time()
        for _ in range(n): f()
        best = min(best, (time.thread_time() - t0) / n)
    return 1e6 * best
for eid in ["CenicQuadruped-v0", "CenicAllegro-v0", "CenicFranka-v0", "CenicSuction-v0"]:
    env = gym.make(eid); env.reset(seed=0)
    for _ in range(5): env.step(env.action_space.sample())
    it = env.unwrapped.sim.integrator; c = it.start
    it._prepare(c, it.q, it.v, it.z, it.t, it.dt)
    q = c.query
    from cenic_gym.contact import compute_kinematics_and_inertia
    Jw, M = compute_kinematics_and_inertia(it.model, it.data, c.q)
    sync = T(lambda: q.sync_joint_poses(it.data)) if it.system.general_joints else 0.0
    prep = T(lambda: cm.prepare_kernel(c.q, c.v, Jw, M, it.dt, it.vs, it._state_args(c)))
    whole = T(lambda: it._prepare(c, c.q, c.v, c.z, c.t, it.dt), 2000)
    print(f"{eid}: general joints {len(it.system.general_joints)}, sync_joint_poses {sync:.1f} us, prepare_kernel {prep:.1f} us, _prepare {whole:.1f} us (CPU, best of 5)")
