"""Rendering cost of every env: the first ``render()`` (builds the MuJoCo visual twin: visual meshes, GL context)
and the median ms per 640×480 frame afterwards, with and without the shadow pass; writes one frame of each env
(after 10 steps of its scripted policy, random where none) to docs/frames/ at half size.

    MUJOCO_GL=egl NUMBA_NUM_THREADS=1 OMP_NUM_THREADS=1 python benchmarks/render_cost.py [--env ID ...]
                                                                  [--frames DIR] [--no-write]

Every registered ``Cenic*`` id unless ``--env`` names some. Without a GPU, EGL is Mesa's software rasterizer
(llvmpipe, on the CPU, several threads). Writes the ``render-cost`` section of ``benchmarks/RESULTS.md``
(``--no-write``: print only) and the frames to ``--frames`` (default ``docs/frames``); a full run takes under a
minute. A timing benchmark: run it on an idle machine.
"""
import argparse
import os
import shlex
import statistics
import sys
import time
from pathlib import Path

import gymnasium as gym

from bench_common import provenance, write_section
from cenic_gym.render_demo import scripted_policy  # (importing cenic_gym registers the envs)

FRAMES = 10
OUT = Path(__file__).resolve().parent.parent / "docs" / "frames"


def measure(env_id, out_dir):
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
    out_dir.mkdir(parents=True, exist_ok=True)
    import imageio.v2 as imageio

    imageio.imwrite(out_dir / f"{env_id}.png", img[::2, ::2])
    env.close()
    return first, times[True], times[False], twin.model.ngeom, tris


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--env", nargs="+", default=None, help="only these ids (default: every Cenic* id)")
    ap.add_argument("--frames", default=str(OUT), help="where the half-size frames go (default docs/frames)")
    ap.add_argument("--no-write", action="store_true", help="print only; leave RESULTS.md alone")
    args = ap.parse_args()
    t_start, load0 = time.perf_counter(), os.getloadavg()[0]
    table = ["| env | first render (twin build) [s] | ms/frame 640×480 | ms/frame, no shadows | drawn geoms "
             "| mesh triangles |", "|---|---|---|---|---|---|"]
    for env_id in args.env or sorted(k for k in gym.registry if k.startswith("Cenic")):
        first, ms, ms_ns, ngeom, tris = measure(env_id, Path(args.frames))
        table.append(f"| {env_id} | {first:.2f} | {ms:.0f} | {ms_ns:.0f} | {ngeom} | {tris} |")
        print(table[-1], flush=True)
    gl = os.environ.get("MUJOCO_GL", "unset")
    command = f"MUJOCO_GL={gl} python benchmarks/render_cost.py {shlex.join(sys.argv[1:])}".rstrip()
    frames = Path(args.frames).resolve()
    frames = frames.relative_to(OUT.parent.parent) if frames.is_relative_to(OUT.parent.parent) else frames
    body = "\n".join([
        *provenance("benchmarks/render_cost.py", f"`{command}`", time.perf_counter() - t_start, load0,
                    ("mujoco", "gymnasium")),
        "`render_mode=\"rgb_array\"` draws a MuJoCo visual twin of the env's system offscreen (robots' visual meshes "
        "from example-robot-data, the collision shapes for the rest). Per env: the first `render()` (visual meshes, "
        f"twin, GL context), then the median of {FRAMES} frames at 640×480 after 10 policy steps, with the default "
        f"shadow map and without it (one geometry pass instead of two). Frames: `{frames}/<id>.png`.",
        "",
        *table,
    ])
    print(body)
    if not args.no_write:
        write_section("render-cost", body, "## Rendering cost")


if __name__ == "__main__":
    main()
