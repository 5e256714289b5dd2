"""The Ray executor's start, in this process: which cluster it joins (``--ray-address``, else
``RAY_ADDRESS``, else a local one it starts and stops), what it says when it cannot join one or
the workers are not this assay, and how it sizes the window of tasks and places the shared actors.

A real local Ray cluster of two CPUs serves the tests that need one; the test of the local start
stops it first and starts its own in a Ray folder of its own (so it cannot join another one).
"""

from __future__ import annotations

import shutil
import socket
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from _support import Example, RunCli

from assay._version import __version__
from assay.runner import ray_executor
from assay.runner.ray_executor import (
    RayExecutorError,
    _cluster,
    _first_line,
    _here,
    _window,
    check_reachable,
)

ray = pytest.importorskip("ray")  # the [ray] extra; CI installs it, so this never skips there


@pytest.fixture(scope="module", autouse=True)
def _stopped_after_the_module() -> Iterator[None]:
    """Whatever cluster this module's tests connected to is stopped when they are done."""
    yield
    ray.shutdown()


@pytest.fixture
def cluster() -> None:
    """A local Ray cluster of two CPUs this process is connected to (started once, and again
    after a test that stopped it)."""
    if not ray.is_initialized():
        ray.init(num_cpus=2, include_dashboard=False, logging_level="WARNING")


@pytest.fixture
def ray_tmpdir(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A short folder of its own for Ray's sessions (Ray's socket paths must stay short), as
    ``RAY_TMPDIR``, and no ``RAY_ADDRESS``: no other cluster can be found from here."""
    folder = Path(tempfile.mkdtemp(prefix="assay-ray-"))
    monkeypatch.setenv("RAY_TMPDIR", str(folder))
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _eval_on_ray(run_cli: RunCli, example: Example, *extra: str) -> tuple[int, str]:
    run = run_cli(
        "eval", example.evalset, "--traces", example.traces, "--no-cache", "--no-history",
        "--executor", "ray", *extra,
    )  # fmt: skip
    assert "Traceback" not in run.output
    return run.code, run.err


# --- which cluster, and what is said when there is none ---------------------------------------


def test_without_ray_the_ray_executor_says_how_to_install_it(
    run_cli: RunCli, example: Example, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray now fails, as without the extra

    code, err = _eval_on_ray(run_cli, example)

    assert code == 2
    assert "--executor ray needs Ray: pip install 'assay[ray]' (here and on every node)" in err


def test_ray_address_in_the_environment_is_the_cluster_joined_when_none_is_given(
    run_cli: RunCli, example: Example, monkeypatch: pytest.MonkeyPatch
) -> None:
    address = f"127.0.0.1:{_closed_port()}"
    monkeypatch.setenv("RAY_ADDRESS", address)

    code, err = _eval_on_ray(run_cli, example)

    assert code == 2
    assert f"cannot reach the Ray cluster at {address}: " in err


def test_an_address_that_refuses_connections_is_named_with_the_reason_and_the_fix() -> None:
    address = f"ray://127.0.0.1:{_closed_port()}"

    with pytest.raises(RayExecutorError) as raised:
        check_reachable(address)

    assert str(raised.value) == (
        f"cannot reach the Ray cluster at {address}: Connection refused (is the cluster up, and "
        "is this its head node's address: ray status prints it?)"
    )


@pytest.mark.parametrize("address", ["nowhere", "127.0.0.1:", "ray://:6379", "127.0.0.1:port"])
def test_an_address_without_a_host_and_port_is_said_to_be_no_address(address: str) -> None:
    with pytest.raises(RayExecutorError) as raised:
        check_reachable(address)

    assert str(raised.value) == (
        f"Ray address {address!r} is not HOST:PORT, ray://HOST:PORT, auto or local"
    )


def test_auto_with_no_cluster_to_find_says_it_cannot_connect_at_auto(
    run_cli: RunCli, example: Example, ray_tmpdir: Path
) -> None:
    ray.shutdown()  # not connected: assay itself asks Ray for the cluster "auto" finds

    code, err = _eval_on_ray(run_cli, example, "--ray-address", "auto")

    assert code == 2
    assert "cannot connect to a Ray cluster at auto: Could not find any running Ray instance" in err
    assert not ray.is_initialized()


@pytest.mark.parametrize("kind", ["none", "auto", "local", "host:port", "ray://host:port"])
def test_a_connection_this_process_has_is_used_as_it_is_and_left_open(
    cluster: None, kind: str
) -> None:
    gcs = ray.get_runtime_context().gcs_address
    address = {"none": None, "host:port": gcs, "ray://host:port": f"ray://{gcs}"}.get(kind, kind)
    node = ray.get_runtime_context().get_node_id()

    with _cluster(ray, address, {}) as runtime_env:
        assert runtime_env == {}
        assert ray.get_runtime_context().get_node_id() == node

    assert ray.is_initialized()
    assert ray.get_runtime_context().get_node_id() == node


LOCAL_MODULE = "VALUE = 'shipped with the job'\n"


def test_with_no_address_a_local_cluster_is_started_with_the_agent_s_code_and_stopped_after(
    ray_tmpdir: Path, tmp_path: Path
) -> None:
    ray.shutdown()
    code = tmp_path / "code"
    code.mkdir()
    (code / "assay_start_probe_module.py").write_text(LOCAL_MODULE, encoding="utf-8")

    def shipped_value() -> str:
        import assay_start_probe_module  # type: ignore[import-not-found]

        return str(assay_start_probe_module.VALUE)

    with _cluster(ray, None, {"working_dir": str(code)}) as runtime_env:
        assert runtime_env == {}  # the job's own runtime environment carries the code
        assert ray.is_initialized()
        assert list((ray_tmpdir / "ray").glob("session_2*")), "no local cluster was started"
        assert ray.get(ray.remote(shipped_value).remote(), timeout=120) == "shipped with the job"
        dashboard = ray._private.worker.global_worker.node.address_info.get("webui_url")
        assert not dashboard  # no dashboard for a cluster that lives for one run

    assert not ray.is_initialized()


# --- the first task -------------------------------------------------------------------------------


def test_workers_of_another_assay_version_are_refused_before_any_case(
    cluster: None, run_cli: RunCli, example: Example, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(ray_executor, "__version__", "0.0.0.dev-driver")

    code, err = _eval_on_ray(run_cli, example)

    assert code == 2
    assert (
        f"the cluster's workers run assay {__version__}, this is assay 0.0.0.dev-driver: install the "
        "same version on every node"
    ) in " ".join(err.split())


# --- how the run uses the cluster ---------------------------------------------------------------


@pytest.mark.parametrize(("task_cpus", "window"), [(1.0, 6), (0.5, 12), (2.0, 3), (4.0, 2)])
def test_the_window_is_three_tasks_per_task_slot_and_at_least_two(
    cluster: None, task_cpus: float, window: int
) -> None:
    assert ray.cluster_resources()["CPU"] == 2
    assert _window(ray, task_cpus) == window


def test_the_shared_actors_go_to_the_driver_s_node_or_elsewhere_when_it_is_lost(
    cluster: None,
) -> None:
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    strategy = _here(ray)

    assert isinstance(strategy, NodeAffinitySchedulingStrategy)
    assert strategy.node_id == ray.get_runtime_context().get_node_id()
    assert strategy.soft is True


def test_an_error_is_shown_by_its_last_line_that_is_not_blank() -> None:
    error = RuntimeError("Traceback (most recent call last):\n  File x\n\nValueError: bad \n  \n")

    assert _first_line(error) == "ValueError: bad"
    assert _first_line(RuntimeError(" \n ")) == "RuntimeError"
    assert _first_line(KeyError()) == "KeyError"
