"""RayVectorEnv on a two-node Ray cluster started on this machine (``ray.cluster_utils.Cluster``): the actors are
spread over both nodes, the run is bit-identical to an in-process loop, and an actor killed on the second node is
re-created without disturbing the other node's sub-envs."""
from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode, SyncVectorEnv

import cenic_gym  # noqa: F401

ray = pytest.importorskip("ray")
from ray.cluster_utils import Cluster  # noqa: E402

from cenic_gym.vector import RayVectorEnv  # noqa: E402

ENV, N = "CenicFranka-v0", 4


@pytest.fixture(scope="module")
def two_nodes():
    if ray.is_initialized():
        ray.shutdown()
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "include_dashboard": False})
    cluster.add_node(num_cpus=1)
    cluster.wait_for_nodes()
    ray.init(address=cluster.address, log_to_driver=False)
    yield cluster
    ray.shutdown()
    cluster.shutdown()


def _make():
    return gym.make(ENV, max_episode_steps=5)


def test_actors_on_both_nodes_bit_identical_and_recover(two_nodes):
    nodes = {n["NodeID"] for n in ray.nodes() if n["Alive"]}
    assert len(nodes) == 2
    venv = RayVectorEnv(ENV, N, env_kwargs={"max_episode_steps": 5}, envs_per_actor=2)
    ref = SyncVectorEnv([_make] * N, autoreset_mode=AutoresetMode.NEXT_STEP)
    try:
        placed = ray.get([a.node_id.remote() for a in venv.actors])
        assert set(placed) == nodes  # one actor per node
        obs, _ = venv.reset(seed=21)
        assert np.array_equal(obs, ref.reset(seed=21)[0])
        acts = np.random.default_rng(0).uniform(-1, 1, size=(9, N, 8))
        for a in acts[:6]:
            got, want = venv.step(a), ref.step(a)
            for x, y in zip(got[:4], want[:4]):
                assert np.array_equal(x, y)
        victim = 1  # kill one actor; the other one's sub-envs (on the other node) must be untouched
        ray.kill(venv.actors[victim])
        reported = False
        for a in acts[6:]:
            obs, rew, term, trunc, info = venv.step(a)
            obs_r, rew_r, term_r, trunc_r, _ = ref.step(a)
            keep = venv.slices[1 - victim]
            assert np.array_equal(obs[keep], obs_r[keep]) and np.array_equal(rew[keep], rew_r[keep])
            assert np.all(np.isfinite(obs))
            if "_actor_restarted" in info:
                assert info["_actor_restarted"][venv.slices[victim]].all() and trunc[venv.slices[victim]].all()
                reported = True
        assert reported and venv.restarts == 1
        placed = ray.get([a.node_id.remote() for a in venv.actors])
        assert set(placed) <= nodes and len(placed) == 2
    finally:
        venv.close()
        ref.close()
