"""The Ray executor's start, in this process: which cluster it joins (``--ray-address``, else
``RAY_ADDRESS``, else a local one it starts and stops), what it says when it cannot join one or
the workers are not this assay, and how it sizes the window of tasks and places the shared actors.

A real local Ray cluster of two CPUs serves the tests that need one; the test of the local start
stops it first and starts its own in a Ray folder of its own (so it cannot join another one).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from _support import Example, RunCli

from assay._version import __version__
from assay.runner import ray_executor
from assay.runner.ray_executor import (
    RayExecutorError,
    _cluster,
    _first_line,
    _here,
    _import_ray,
    _probe,
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


def test_without_ray_the_error_is_exactly_how_to_install_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)

    with pytest.raises(RayExecutorError) as raised:
        _import_ray()

    assert str(raised.value) == (
        "--executor ray needs Ray: pip install 'assay[ray]' (here and on every node)"
    )


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


def test_an_address_that_does_not_answer_is_given_up_on_after_the_connect_timeout(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(ray_executor, "CONNECT_TIMEOUT_S", 0.2)
    with socket.socket() as server, contextlib.ExitStack() as held:
        server.bind(("127.0.0.1", 0))
        server.listen(0)
        port = int(server.getsockname()[1])
        for _ in range(64):  # its queue full of connections it never accepts: the next one waits
            client = held.enter_context(socket.socket())
            client.settimeout(0.2)
            try:
                client.connect(("127.0.0.1", port))
            except TimeoutError:
                break
        else:
            pytest.fail("the listening socket accepted every connection")

        with pytest.raises(RayExecutorError) as raised:
            check_reachable(f"127.0.0.1:{port}")

    assert str(raised.value).startswith(
        f"cannot reach the Ray cluster at 127.0.0.1:{port}: timed out ("
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


SHIPPED_PACKAGE = "VALUE = 'shipped to a running cluster'\n"


@pytest.mark.parametrize("kind", ["working_dir", "py_modules"])
def test_code_shipped_to_a_cluster_this_process_joined_is_uploaded_without_what_git_ignores(
    cluster: None, tmp_path: Path, kind: str
) -> None:
    package = tmp_path / "code" / "assay_start_shipped_package"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text(SHIPPED_PACKAGE, encoding="utf-8")
    (package / "notes.txt").write_text("left out by .gitignore", encoding="utf-8")
    (package / ".gitignore").write_text("notes.txt\n", encoding="utf-8")
    local = str(package.parent) if kind == "working_dir" else [str(package)]

    def shipped() -> tuple[str, bool]:
        import assay_start_shipped_package  # type: ignore[import-not-found]

        folder = Path(assay_start_shipped_package.__file__).parent
        return str(assay_start_shipped_package.VALUE), (folder / "notes.txt").exists()

    with _cluster(ray, None, {kind: local}) as runtime_env:
        assert list(runtime_env) == [kind]  # the job's environment is fixed: each task names it
        uris = runtime_env[kind] if kind == "py_modules" else [runtime_env[kind]]
        assert all(str(uri).startswith("gcs://") for uri in uris)  # uploaded, no local path
        task = ray.remote(shipped).options(runtime_env=runtime_env)
        assert ray.get(task.remote(), timeout=120) == ("shipped to a running cluster", False)

    assert ray.is_initialized()


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


ECHO_AGENT = "def agent(message, session):\n    return 'echo ' + message\n"


@pytest.fixture
def shipped_agent(cluster: None, tmp_path: Path) -> Iterator[dict[str, Any]]:
    """The runtime environment of an agent file's folder, uploaded to the cluster joined."""
    code = tmp_path / "agent"
    code.mkdir()
    (code / "echo_agent.py").write_text(ECHO_AGENT, encoding="utf-8")
    with _cluster(ray, None, {"working_dir": str(code)}) as runtime_env:
        yield runtime_env


def test_the_first_task_passes_an_agent_the_workers_load_and_names_one_they_cannot(
    shipped_agent: dict[str, Any],
) -> None:
    _probe(ray, "echo_agent.py:agent", shipped_agent, {"ASSAY_PROBE": "1"})  # loads: no error

    with pytest.raises(RayExecutorError) as raised:
        _probe(ray, "missing_agent.py:agent", shipped_agent, {})

    assert str(raised.value).startswith(
        "the workers cannot load the agent 'missing_agent.py:agent': "
    )


def _raising(error: Exception) -> Callable[[str | None, dict[str, str]], str]:
    def probe(spec: str | None, env: dict[str, str]) -> str:
        raise error

    return probe


@pytest.mark.parametrize(
    ("error", "message"),
    [
        (
            ModuleNotFoundError("No module named 'assay'"),
            "the cluster's workers cannot import assay: install it on every node "
            f"(pip install 'assay[ray]=={__version__}') or in the cluster's image",
        ),
        (ValueError("the probe broke"), "the first Ray task failed: ValueError: the probe broke"),
    ],
)
def test_a_first_task_that_raises_is_said_to_fail_and_a_missing_assay_how_to_install_it(
    cluster: None, monkeypatch: pytest.MonkeyPatch, error: Exception, message: str
) -> None:
    monkeypatch.setattr(ray_executor, "probe", _raising(error))

    with pytest.raises(RayExecutorError) as raised:
        _probe(ray, None, {}, {})

    assert str(raised.value) == message


def test_a_first_task_no_worker_finishes_in_time_is_said_to_need_free_cpus(
    cluster: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    def stuck(spec: str | None, env: dict[str, str]) -> str:
        time.sleep(60)
        return ""

    monkeypatch.setattr(ray_executor, "probe", stuck)
    monkeypatch.setattr(ray_executor, "PROBE_TIMEOUT_S", 0.5)

    with pytest.raises(RayExecutorError) as raised:
        _probe(ray, None, {}, {})

    assert str(raised.value) == (
        "no Ray worker ran the first task within 0.5 s (does the cluster have a node with free "
        "CPUs?)"
    )


def test_the_first_task_runs_while_every_cpu_of_the_cluster_is_taken(
    cluster: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    @ray.remote(num_cpus=1)
    class Holder:
        def ready(self) -> bool:
            return True

    holders = [Holder.remote() for _ in range(2)]  # type: ignore[attr-defined]
    ray.get([holder.ready.remote() for holder in holders])
    monkeypatch.setattr(ray_executor, "PROBE_TIMEOUT_S", 20.0)
    try:
        assert ray.available_resources().get("CPU", 0) == 0

        _probe(ray, None, {}, {})
    finally:
        for holder in holders:
            ray.kill(holder)


def test_a_first_task_whose_worker_dies_is_tried_twice_then_said_to_fail(
    cluster: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    attempts = tmp_path / "attempts"

    def dies(spec: str | None, env: dict[str, str]) -> str:
        with attempts.open("a", encoding="utf-8") as out:
            out.write("attempt\n")
        os._exit(1)

    monkeypatch.setattr(ray_executor, "probe", dies)

    with pytest.raises(RayExecutorError) as raised:
        _probe(ray, None, {}, {})

    assert str(raised.value).startswith("the first Ray task failed: ")
    assert attempts.read_text(encoding="utf-8").splitlines() == ["attempt", "attempt"]


def test_code_the_workers_cannot_set_up_is_named_with_the_runtime_environment(
    cluster: None,
) -> None:
    runtime_env = {"working_dir": "gcs://_ray_pkg_0123456789abcdef0123456789abcdef.zip"}

    with pytest.raises(RayExecutorError) as raised:
        _probe(ray, None, runtime_env, {})

    assert str(raised.value).startswith(
        f"the workers cannot set up the agent's code ({runtime_env}): "
    )


# --- how the run uses the cluster ---------------------------------------------------------------


@pytest.mark.parametrize(("task_cpus", "window"), [(1.0, 6), (0.5, 12), (2.0, 3), (4.0, 2)])
def test_the_window_is_three_tasks_per_task_slot_and_at_least_two(
    cluster: None, task_cpus: float, window: int
) -> None:
    assert ray.cluster_resources()["CPU"] == 2
    assert _window(ray, task_cpus) == window


def test_a_cluster_without_cpus_counts_as_one_slot_per_cpu_a_task_takes(
    ray_tmpdir: Path,
) -> None:
    ray.shutdown()
    ray.init(num_cpus=0, include_dashboard=False, logging_level="WARNING")
    try:
        assert not ray.cluster_resources().get("CPU")

        assert [_window(ray, cpus) for cpus in (1.0, 0.25)] == [3, 12]
    finally:
        ray.shutdown()  # the next test that needs a cluster starts one with CPUs


def test_the_shared_actors_go_to_the_driver_s_node_or_elsewhere_when_it_is_lost(
    cluster: None,
) -> None:
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    strategy = _here(ray)

    assert isinstance(strategy, NodeAffinitySchedulingStrategy)
    assert strategy.node_id == ray.get_runtime_context().get_node_id()
    assert strategy.soft is True


class _NoNode:
    """A runtime context of a driver that is no node (as with Ray Client)."""

    def get_node_id(self) -> None:
        return None


def _no_context() -> Any:
    raise RuntimeError("Ray Client: no runtime context of a node")


@pytest.mark.parametrize("context", [_no_context, _NoNode], ids=["raises", "no-node"])
def test_the_shared_actors_go_where_ray_places_them_when_the_driver_is_no_node(
    cluster: None, monkeypatch: pytest.MonkeyPatch, context: Callable[[], Any]
) -> None:
    with monkeypatch.context() as patched:
        patched.setattr(ray, "get_runtime_context", context)
        strategy = _here(ray)

    @ray.remote(num_cpus=0)
    class Placed:
        def ping(self) -> str:
            return "placed"

    actor = Placed.options(scheduling_strategy=strategy).remote()  # type: ignore[attr-defined]
    try:
        assert ray.get(actor.ping.remote(), timeout=60) == "placed"
    finally:
        ray.kill(actor)


def test_an_error_is_shown_by_its_last_line_that_is_not_blank() -> None:
    error = RuntimeError("Traceback (most recent call last):\n  File x\n\nValueError: bad \n  \n")

    assert _first_line(error) == "ValueError: bad"
    assert _first_line(RuntimeError(" \n ")) == "RuntimeError"
    assert _first_line(KeyError()) == "KeyError"
