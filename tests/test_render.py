"""Rendering: every env draws a non-blank image offscreen (CPU, no display) that changes when the scene moves;
nothing is built while render_mode is None; bad render options raise; Gymnasium's RecordVideo works unchanged; the
meshcat viewer receives the scene."""
import base64
import os
import re
import subprocess
import sys
import textwrap

import gymnasium as gym
import numpy as np
import pytest

import cenic_gym  # noqa: F401  (registers the envs)
from cenic_gym import render as rd

IDS = ["CenicFranka-v0", "CenicFrankaGoal-v0", "CenicQuadruped-v0", "CenicAllegro-v0", "CenicSuction-v0",
       "CenicPegInsertion-v0"]
W, H = 160, 120  # small frames keep the software GL cheap in CI


def _image_stats(img):
    """(std of the grey levels, number of distinct colours) of an RGB frame."""
    grey = img.astype(float).mean(axis=2)
    return grey.std(), len(np.unique(img.reshape(-1, 3), axis=0))


@pytest.mark.parametrize("env_id", IDS)
def test_renders_non_blank_and_changes_when_the_scene_moves(env_id):
    env = gym.make(env_id, render_mode="rgb_array", render_width=W, render_height=H)
    env.reset(seed=0)
    a = env.render()
    assert a.shape == (H, W, 3) and a.dtype == np.uint8
    std, colours = _image_stats(a)
    assert std > 10.0 and colours > 50, (std, colours)  # shaded geometry on a background, not a flat fill
    assert np.array_equal(env.render(), a)  # same state, same image
    for _ in range(6):
        env.step(np.ones(env.action_space.shape))
    b = env.render()
    changed = np.any(a != b, axis=2).mean()
    assert changed > 0.002, f"{env_id}: only {changed:.4%} of the pixels changed after 6 steps"
    env.close()


def test_moving_a_free_body_moves_its_pixels():
    """The cube of CenicAllegro-v0 lifted by 3 cm: the image changes, and putting it back restores it exactly."""
    env = gym.make("CenicAllegro-v0", render_mode="rgb_array", render_width=W, render_height=H).unwrapped
    env.reset(seed=0)
    a = env.render()
    q = env.sim.q
    q2 = q.copy()
    q2[env.cube_q.start + 2] += 0.03
    env.sim.set_state(q=q2)
    b = env.render()
    assert np.any(a != b, axis=2).mean() > 0.005
    env.sim.set_state(q=q)
    assert np.array_equal(env.render(), a)
    env.close()


def test_scenery_drawn_per_episode_is_drawn_where_the_simulator_has_it():
    """CenicPegInsertion-v0 moves its fixture every reset (``Simulator.set_geometry_pose``): the twin draws each
    fixture wall at the simulator's pose, not the built one, and the image follows the fixture."""
    env = gym.make("CenicPegInsertion-v0", render_mode="rgb_array", render_width=W, render_height=H).unwrapped
    frames = []
    for seed in (0, 1):
        env.reset(seed=seed)
        frames.append(env.render())
        twin = env._viewer
        for k, i in twin._movable:
            np.testing.assert_allclose(twin.data.geom_xpos[k], env.sim.geometry_placements()[i].translation,
                                       atol=1e-12)
        name = env.fixture_geoms[0]
        k = next(k for k, i in twin._movable if env.sim.system.geometries[i].name == name)
        np.testing.assert_allclose(twin.data.geom_xpos[k], env.sim.geometry_pose(name)[0], atol=1e-12)
    assert np.any(frames[0] != frames[1], axis=2).mean() > 0.002
    env.close()


def test_nothing_is_built_without_render_mode(monkeypatch):
    def boom(*args, **kwargs):
        raise AssertionError("a renderer was built with render_mode=None")

    monkeypatch.setattr(rd, "VisualTwin", boom)
    monkeypatch.setattr(rd, "make_viewer", boom)
    env = gym.make("CenicSuction-v0")
    env.reset(seed=0)
    env.step(env.action_space.sample())
    with pytest.warns(UserWarning, match="render_mode=None"):
        assert env.render() is None
    assert env.unwrapped._viewer is None


def test_mujoco_is_not_imported_without_render_mode():
    code = textwrap.dedent("""
        import sys, gymnasium as gym, cenic_gym
        env = gym.make("CenicSuction-v0")
        env.reset(seed=0)
        assert "mujoco" not in sys.modules, "mujoco was imported with render_mode=None"
    """)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([os.getcwd(), os.environ.get("PYTHONPATH", "")])}
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]


@pytest.mark.parametrize("kwargs, message", [
    (dict(render_mode="rgb"), "render_mode='rgb' is not one of"),
    (dict(render_width=0), "render_width must be an integer in 1..4096"),
    (dict(render_height=5000), "render_height must be an integer in 1..4096"),
    (dict(render_width=64.5), "render_width=64.5 must be an integer"),
    (dict(camera=dict(zoom=2)), "unknown keys ['zoom']"),
    (dict(camera=dict(distance=-1.0)), "camera['distance'] must be > 0"),
    (dict(camera=dict(elevation=120)), "camera['elevation'] must be in [-90, 90]"),
    (dict(camera=dict(lookat=(0, 0))), "camera['lookat'] must be three finite numbers"),
    (dict(camera=dict(azimuth=float("nan"))), "camera['azimuth'] must be a finite number"),
    (dict(camera="top"), "camera"),
    (dict(viewer="vr"), "viewer='vr' is not one of"),
])
def test_bad_render_options_raise(kwargs, message):
    with pytest.raises(ValueError) as e:
        gym.make("CenicSuction-v0", **kwargs)
    assert message in str(e.value)


def test_unknown_tracked_body_raises_naming_it():
    env = gym.make("CenicSuction-v0", render_mode="rgb_array", render_width=W, render_height=H,
                   camera=dict(track="nope"))
    env.reset(seed=0)
    with pytest.raises(ValueError, match="camera\\['track'\\]='nope'"):
        env.render()


def test_camera_options_change_the_image():
    frames = []
    for cam in (dict(), dict(azimuth=30.0), dict(distance=3.0)):
        env = gym.make("CenicSuction-v0", render_mode="rgb_array", render_width=W, render_height=H, camera=cam)
        env.reset(seed=0)
        frames.append(env.render())
    assert not np.array_equal(frames[0], frames[1]) and not np.array_equal(frames[0], frames[2])


def test_env_with_a_twin_pickles_and_renders_again():
    import pickle

    env = gym.make("CenicSuction-v0", render_mode="rgb_array", render_width=W, render_height=H).unwrapped
    env.reset(seed=0)
    a = env.render()
    env2 = pickle.loads(pickle.dumps(env))
    assert env2._viewer is None
    assert np.array_equal(env2.render(), a)


def test_no_gl_raises_naming_the_variable(monkeypatch):
    env = gym.make("CenicSuction-v0", render_mode="rgb_array", render_width=W, render_height=H).unwrapped
    env.reset(seed=0)
    mujoco = rd.import_mujoco()

    def no_context(*args, **kwargs):
        raise RuntimeError("cannot initialize EGL")

    monkeypatch.setattr(mujoco, "Renderer", no_context)
    with pytest.raises(rd.RenderError, match="MUJOCO_GL"):
        env.render()


def test_record_video_wrapper_writes_an_mp4(tmp_path):
    pytest.importorskip("moviepy")  # Gymnasium's RecordVideo writes through moviepy
    env = gym.make("CenicSuction-v0", render_mode="rgb_array", render_width=64, render_height=48)
    env = gym.wrappers.RecordVideo(env, str(tmp_path), episode_trigger=lambda e: True, disable_logger=True)
    env.reset(seed=0)
    for _ in range(5):
        env.step(env.action_space.sample())
    env.close()
    videos = list(tmp_path.glob("*.mp4"))
    assert len(videos) == 1 and videos[0].stat().st_size > 1000


def test_meshcat_viewer_receives_the_scene():
    pytest.importorskip("meshcat")
    env = gym.make("CenicSuction-v0", render_mode="human", viewer="meshcat").unwrapped
    env.reset(seed=0)  # human mode draws on reset and step
    viewer = env._viewer
    assert isinstance(viewer, rd.MeshcatViewer) and viewer.url.startswith("http")
    env.step(env.action_space.sample())
    # the server's scene: one base64 msgpack blob per drawn object and per transform, naming its scene path
    scene = viewer.vis.window.get_scene()
    blobs = [base64.b64decode(b) for b in re.findall(r"base64,([A-Za-z0-9+/=]+)", scene)]
    paths = b"".join(blobs)
    n_objects = sum(len(rd._meshcat_objects(g)) for g in rd.visual_geoms(env.sim.system))
    assert paths.count(b"/meshcat/cenic/joint") >= n_objects
    for j in viewer.joints:
        assert f"/meshcat/cenic/joint{j}".encode() in paths
    env.close()
    assert viewer.vis.window.server_proc.poll() is not None  # the server we started is gone


def test_simplify_mesh_keeps_a_coarse_mesh_and_merges_a_fine_one():
    # a unit square split into 2 triangles survives a fine grid; with a cell larger than the square it collapses
    v = np.array([[0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0]], float)
    f = np.array([[0, 1, 2], [0, 2, 3]])
    v2, f2 = rd.simplify_mesh(v, f, 0.1)
    assert v2.shape == (4, 3) and f2.shape == (2, 3)
    v3, f3 = rd.simplify_mesh(v, f, 10.0)
    assert f3.shape == (0, 3)


def test_cli_env_demo_writes_a_video_and_a_plot(tmp_path, capsys):
    from cenic_gym import cli

    video, plot = tmp_path / "v" / "demo.mp4", tmp_path / "p" / "demo.png"
    assert cli.main(["demo", "CenicSuction-v0", "--duration", "0.15", "--video", str(video),
                     "--out", str(plot)]) == 0
    assert video.stat().st_size > 1000 and plot.stat().st_size > 10000
    out = capsys.readouterr().out
    assert "0.15 s simulated (3 env steps)" in out and "scripted policy" in out and str(video) in out


def test_cli_env_demo_rejects_an_unknown_env(capsys):
    from cenic_gym import cli

    with pytest.raises(SystemExit) as e:
        cli.main(["demo", "CenicNope-v0"])
    assert e.value.code == 2 and "unknown env 'CenicNope-v0'" in capsys.readouterr().err


def test_work_precision_error_shrinks_with_the_accuracy(tmp_path):
    from cenic_gym import plots, scenes

    points = plots.work_precision(scenes.sphere_drop, accuracies=(1e-2, 1e-3, 1e-4), duration=0.3)
    errors = [p.error for p in points]
    assert errors[0] > errors[1] > errors[2] > 0, errors  # a convergence study, not a timing: no wall-time asserts
    plots.plot_work_precision(points, "sphere drop", tmp_path / "wp.png")
    assert (tmp_path / "wp.png").stat().st_size > 10000


def test_rendering_does_not_change_the_physics():
    """Same seed and actions with and without a frame drawn after every step: bit-identical observations."""
    def rollout(render_mode):
        env = gym.make("CenicSuction-v0", render_mode=render_mode, render_width=64, render_height=48)
        obs, _ = env.reset(seed=3)
        env.action_space.seed(3)
        out = [obs]
        for _ in range(8):
            out.append(env.step(env.action_space.sample())[0])
            if render_mode:
                env.render()
        return np.array(out)

    assert np.array_equal(rollout(None), rollout("rgb_array"))


def test_cli_env_demo_names_a_missing_package(monkeypatch, capsys):
    import importlib.util

    from cenic_gym import cli

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "imageio_ffmpeg" else real(name, *a))
    with pytest.raises(SystemExit) as e:
        cli.main(["demo", "CenicSuction-v0"])
    assert e.value.code == 2 and "needs imageio_ffmpeg: pip install 'cenic-gym[render]'" in capsys.readouterr().err


def test_franka_frames_draw_the_target_region_where_the_target_is():
    """The green target marker: its pixels appear in the frame and move when the episode's target moves; the
    markers are drawn only (the same state renders the same image, the physics does not see them)."""
    env = gym.make("CenicFranka-v0", render_mode="rgb_array", render_width=W, render_height=H).unwrapped

    def green(img):
        r, g, b = (img[..., k].astype(int) for k in range(3))
        return np.argwhere((g > 120) & (g > r + 60) & (g > b + 60))

    env.reset(seed=0, options=dict(target_xy=(0.45, 0.10)))
    a = green(env.render())
    env.reset(seed=0, options=dict(target_xy=(0.60, 0.30)))
    b = green(env.render())
    assert len(a) > 5 and len(b) > 5, (len(a), len(b))
    assert np.abs(a.mean(axis=0) - b.mean(axis=0)).max() > 3.0  # the marker moved with the target [px]
    env.close()


def test_cli_env_demo_plays_a_trained_policy(tmp_path, capsys):
    """`cenic-gym demo ENV --policy FOLDER`: the shipped policy acts, with its run's env options."""
    pytest.importorskip("stable_baselines3")
    from pathlib import Path

    from cenic_gym import cli

    folder = Path(__file__).resolve().parents[1] / "training" / "policies" / "CenicFranka-v0"
    video = tmp_path / "policy.mp4"
    assert cli.main(["demo", "CenicFranka-v0", "--policy", str(folder), "--seed", "3", "--duration", "0.1",
                     "--video", str(video), "--out", str(tmp_path / "policy.png")]) == 0
    assert video.stat().st_size > 1000
    assert f"learned ({folder}) policy" in capsys.readouterr().out
    with pytest.raises(SystemExit) as e:
        cli.main(["demo", "CenicQuadruped-v0", "--policy", str(folder), "--duration", "0.1"])
    assert e.value.code == 2 and "trained on CenicFranka-v0" in capsys.readouterr().err
