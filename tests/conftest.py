"""Fixtures shared by several test files."""
import pytest


@pytest.fixture(scope="module")
def ray_local():
    """A local Ray instance (2 CPUs, no dashboard) for one test module; left running if the caller started one."""
    import ray

    started = not ray.is_initialized()
    if started:
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    if started:
        ray.shutdown()
