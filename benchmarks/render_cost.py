"""Rendering cost of every env: the first ``render()`` (builds the MuJoCo visual twin: visual meshes, GL context)
and the median ms per 640×480 frame afterwards (software EGL on the CPU), with and without the shadow pass; writes
one frame of each env (after 10 steps of its scripted policy, random where none) to docs/frames/ at half size.

    MUJOCO_GL=egl PYTHONPATH=. NUMBA_NUM_THREADS=1 OMP_NUM_THREADS=1 python benchmarks/render_cost.py
"""
import statistics
import time
from pathlib import Path

import gymnasium as gym

import cenic_gym  # noqa: F401
from cenic_gym.render_demo import scripted_policy

IDS = ["CenicFranka-v0", "CenicFrankaGoal-v0", "CenicQuadruped-v0", "CenicAllegro-v0", "CenicSuction-v0"]
FRAMES = 10
OUT = Path(__file__).resolve().parent.parent / "docs" / "frames"


def measure(env_id):
    env = gym.make(env_id, render_mode="rgb_array", render_width=640, render_height=480)
    obs, _ = env.reset(seed=0)
    policy = scripted_policy(env_id, env)
    if policy is not None:
        policy.reset()
    env.action_space.seed(0)
    for _ in range(10):
        obs, *_ = env.step(policy(obs) if policy is not None else env.action_space.sample())
    w0 = time.perf_counter()
    img = env.render()
    first = time.perf_counter() - w0
    twin = env.unwrapped._viewer
    times = {}
    for shadow in (True, False):
        ts = []
        for _ in range(FRAMES):
            w0 = time.perf_counter()
            if shadow:
                env.render()
            else:  # the same frame without the shadow-map pass
                twin.pose(env.unwrapped.sim.q)
                r = twin._gl()
                r.update_scene(twin.data, camera=twin.mjv_camera())
                r.scene.flags[twin.mujoco.mjtRndFlag.mjRND_SHADOW] = False
                r.render()
            ts.append(time.perf_counter() - w0)
        times[shadow] = 1e3 * statistics.median(ts)
    tris = int(twin.model.nmeshface)
    OUT.mkdir(parents=True, exist_ok=True)
    import imageio.v2 as imageio

    imageio.imwrite(OUT / f"{env_id}.png", img[::2, ::2])
    env.close()
    return first, times[True], times[False], twin.model.ngeom, tris


def main():
    print("| env | first render (twin build) [s] | ms/frame 640×480 | ms/frame, no shadows | drawn geoms "
          "| mesh triangles |")
    print("|---|---|---|---|---|---|")
    for env_id in IDS:
        first, ms, ms_ns, ngeom, tris = measure(env_id)
        print(f"| {env_id} | {first:.2f} | {ms:.0f} | {ms_ns:.0f} | {ngeom} | {tris} |", flush=True)


if __name__ == "__main__":
    main()
