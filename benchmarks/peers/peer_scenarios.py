"""The scenarios of the peer benchmark: a cenic-gym scene, how long to run it, what it is compared against, and the
inputs of the H&C -> linear-damper mapping for SAP and MuJoCo.

Adding a scene = appending a Scenario: a factory returning a cenic-gym MultibodySystem (free bodies and robots from
SceneBuilder.add_robot; peer_drake / peer_mujoco translate revolute / prismatic / free joints, couplers and all
shapes), the end time, what the final state is compared against, the inputs of the damping map and optionally a
joint PD controller. ``robot_scenarios()`` (Go1 drop, stiff PD Panda) needs ``SceneBuilder.add_robot``.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from cenic_gym import ContactMaterial, SceneBuilder, scenes

from peer_common import G, box_corner_inverse_mass


@dataclass
class Scenario:
    name: str
    factory: object  # () -> MultibodySystem
    t_end: float
    reference: str  # "drop_ode" | "incline_stick" | "incline_slide" | "tight_gym"
    note: str
    k_pair: float  # pair stiffness [N/m] (cenic-gym's combined value)
    hc_d: float  # pair Hunt & Crossley dissipation [s/m]
    m_eff: float  # effective mass of the characteristic contact [kg] (damping map)
    v_ref: float | None = None  # impact speed [m/s] for the restitution-matched damper
    rest_penetration: float | None = None  # for resting scenes: linearise H&C about this penetration [m]
    agreement: bool = False  # trajectory agreement cenic-gym vs Drake CENIC
    params: dict = field(default_factory=dict)  # scene parameters used by the reference
    controller: object = None  # None or (system) -> dict(joints, kp, kd, effort, q_target): joint PD control
    coords: str = "free"  # what agreement / errors compare: "free" (free-body origins) or "joints" (controlled joints)
    chaotic: bool = False  # final states of different runs diverge (the error column measures divergence)


def _incline(mu, t_end):
    th = math.radians(20.0)
    k = 1e5
    return Scenario(
        name=f"incline {'stick' if mu >= math.tan(th) else 'slide'}",
        factory=lambda: scenes.incline(20.0, mu),
        t_end=t_end, reference="incline_stick" if mu >= math.tan(th) else "incline_slide",
        note=f"1 kg, 10 cm box on a 20° slope, μ = {mu}, k = 1e5 N/m per corner, d = 10 s/m",
        k_pair=k, hc_d=10.0, m_eff=1.0 / box_corner_inverse_mass((0.1, 0.1, 0.1), 1.0),
        rest_penetration=1.0 * G * math.cos(th) / (4 * k), agreement=True,
        params=dict(angle=th, mu=mu))


def core_scenarios():
    v_drop = math.sqrt(2 * G * 1.0)
    return [
        Scenario("sphere drop", lambda: scenes.sphere_drop(height=1.0, mass=0.1, stiffness=1e3, dissipation=0.0),
                 2.0, "drop_ode", "0.1 kg ball (r = 5 cm), 1 m drop, k = 1e3 N/m, d = 0 (CENIC Fig. 8)",
                 k_pair=1e3, hc_d=0.0, m_eff=0.1, v_ref=v_drop, agreement=True,
                 params=dict(height=1.0, radius=0.05, mass=0.1)),
        Scenario("sphere drop damped",
                 lambda: scenes.sphere_drop(height=1.0, mass=0.1, stiffness=1e3, dissipation=0.2),
                 2.0, "drop_ode", "same ball, H&C d = 0.2 s/m (restitution 0.62 at the first impact)",
                 k_pair=1e3, hc_d=0.2, m_eff=0.1, v_ref=v_drop, agreement=True,
                 params=dict(height=1.0, radius=0.05, mass=0.1)),
        _incline(0.5, 2.0),
        _incline(0.3, 1.0),
        Scenario("clutter", scenes.clutter, 2.0, "tight_gym",
                 "20 boxes (1 kg) / spheres (0.524 kg) into a bin, k = 1e5 N/m, d = 50 s/m, μ = 0.5",
                 k_pair=1e5, hc_d=50.0, m_eff=1.0 / box_corner_inverse_mass((0.1, 0.1, 0.1), 1.0),
                 v_ref=math.sqrt(2 * G * 0.2), chaotic=True),
        Scenario("sphere clutter", sphere_clutter, 2.0, "tight_gym",
                 "clutter with 20 spheres only (0.524 kg, r = 5 cm): same solver workload, no box contact geometry",
                 k_pair=1e5, hc_d=50.0, m_eff=0.524, v_ref=math.sqrt(2 * G * 0.2), chaotic=True),
    ]


def sphere_clutter(n_objects=20, stiffness=1e5, dissipation=50.0, mu=0.5, seed=0):
    """scenes.clutter with every box replaced by a sphere (same bin, grid, jitter, material): the solver workload of
    clutter without boxes, whose contact geometry differs between engines (Drake point contact: one point per
    box-box pair)."""
    return scenes.clutter(n_objects=n_objects, stiffness=stiffness, dissipation=dissipation, mu=mu, seed=seed,
                          spheres_only=True)


ROBOT_MATERIAL = ContactMaterial(stiffness=2e5, dissipation=10.0, mu_static=0.8)  # pair: k = 1e5 N/m, d = 10 s/m


def go1_drop():
    """Unactuated Unitree Go1 (example-robot-data preset: free base, 12 revolute joints with limits, primitive
    collision shapes) in its standing pose with the base at 0.45 m, dropped on the ground (CENIC Fig. 11, Spot)."""
    b = SceneBuilder()
    b.add_ground(ROBOT_MATERIAL)
    b.add_robot("go1", position=(0.0, 0.0, 0.45), material=ROBOT_MATERIAL)
    return b.build()


def panda_arm():
    """Franka Panda (example-robot-data preset, fixed base, 7 revolute + 2 coupled prismatic finger joints, convex
    collision meshes, SRDF collision filter) on the ground."""
    b = SceneBuilder()
    b.add_ground(ROBOT_MATERIAL)
    b.add_robot("panda", material=ROBOT_MATERIAL)
    return b.build()


PANDA_STEP = np.array([0.4, 0.3, -0.3, 0.4, 0.3, -0.3, 0.4])  # [rad] set-point change of the 7 arm joints


def panda_pd(system, omega=300.0, zeta=1.0):
    """Stiff joint PD on the 7 arm joints: per joint Kp = M_ii ω², Kd = 2 ζ M_ii ω (M at q0; ω = 300 rad/s, i.e.
    ω·h = 3 at h = 10 ms: unstable for an explicit controller), efforts clamped to the URDF limits, set-point
    q0 + PANDA_STEP. No gravity compensation (all engines see the same law)."""
    import pinocchio as pin

    m = system.model
    data = m.createData()
    M = pin.crba(m, data, system.q0)
    M = np.triu(M) + np.triu(M, 1).T
    joints = [m.getJointId(n) for n in m.names if n.startswith("panda/panda_joint")][:7]
    iv = [m.idx_vs[j] for j in joints]
    iq = [m.idx_qs[j] for j in joints]
    Mii = np.array([M[i, i] for i in iv])
    return dict(joints=joints, iq=iq, iv=iv, kp=Mii * omega**2, kd=2 * zeta * Mii * omega,
                effort=np.array([m.effortLimit[i] for i in iv]), q_target=system.q0[iq] + PANDA_STEP)


def robot_scenarios():
    """Go1 drop and a stiff PD Panda."""
    v_foot = math.sqrt(2 * G * 0.2)
    return [
        Scenario("go1 drop", go1_drop, 1.5, "tight_gym",
                 "unactuated Go1 (13.1 kg, 12 joints with limits), standing pose, base at 0.45 m (feet 0.20 m up); "
                 "k = 1e5 N/m, d = 10 s/m, μ = 0.8",
                 k_pair=1e5, hc_d=10.0, m_eff=0.15, v_ref=v_foot),
        Scenario("panda pd", panda_arm, 1.0, "tight_gym",
                 "Panda, stiff joint PD (ω = 300 rad/s, ζ = 1, effort-limited) to q0 + "
                 "[0.4, 0.3, −0.3, 0.4, 0.3, −0.3, 0.4] rad; fingers unactuated (coupled)",
                 k_pair=1e5, hc_d=10.0, m_eff=1.0, v_ref=0.5, agreement=True, controller=panda_pd,
                 coords="joints"),
    ]


def all_scenarios():
    return core_scenarios() + robot_scenarios()


def incline_reference(sc, t):
    """Rigid Coulomb answer: distance slid along the slope after t seconds (0 when μ ≥ tan θ)."""
    th, mu = sc.params["angle"], sc.params["mu"]
    a = G * (math.sin(th) - mu * math.cos(th))
    return 0.5 * max(a, 0.0) * t * t


def slope_distance(q0, q):
    return float(np.linalg.norm(np.asarray(q[:3]) - np.asarray(q0[:3])))
