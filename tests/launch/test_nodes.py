"""Multi-node profiles: the [[nodes]] schema, the aggregate verdict, and launch/wait/stop of two simulated
server processes as two nodes reached through real ssh (a throwaway sshd on 127.0.0.1)."""

from __future__ import annotations

import json
import shlex
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from msgspec.structs import replace

from symmtui.judge.events import Event
from symmtui.judge.readiness import Readiness, ReadinessConfig, Snapshot, State
from symmtui.judge.rules import PHASE_INIT_DIST, PHASE_LOADING, Kind
from symmtui.judge.verdict import NodeView, verdict_of
from symmtui.launch.profile import ProfileError, parse_profile
from tests.launch.helpers import free_port, run_cli
from tests.launch.sshd import LocalSshd, start_sshd

STOP_STATUS = Path(__file__).resolve().parents[1] / "fixtures" / "stop_status.py"


# ---- the schema ---------------------------------------------------------------------------------

def _parse(text: str, tmp_path: Path) -> object:
    return parse_profile(text, tmp_path / "nodes.toml")


def test_nodes_schema_fills_node_rank_and_defaults(tmp_path: Path) -> None:
    p = parse_profile(
        '[server]\nurl = "http://127.0.0.1:30000/health"\n'
        '[[nodes]]\nname = "gpu-a"\nlaunch = "ssh gpu-a python -m sglang.launch_server --node-rank {node_rank}"\n'
        '[[nodes]]\nname = "gpu-b"\nlog = "/var/log/b.log"\ngpus = "http://gpu-b:9400/metrics"\n',
        tmp_path / "nodes.toml")
    a, b = p.nodes
    assert (a.name, a.rank, a.gpus, a.log) == ("gpu-a", 0, "nvml", None)
    assert a.launch is not None and a.launch[-2:] == ("--node-rank", "0")
    assert (b.rank, b.log, b.gpus, b.launch) == (1, Path("/var/log/b.log"), "http://gpu-b:9400/metrics", None)


@pytest.mark.parametrize(("body", "where", "says"), [
    ('[[nodes]]\nname = "a"\nlog = "/x"\n[[nodes]]\nname = "b"\nlgo = "/y"\n', ":8: nodes[1].lgo:", "did you mean 'log'"),
    ('[[nodes]]\nname = "a"\n', ":3: nodes[0]:", "needs log"),
    ('[[nodes]]\nname = "a"\nlog = "/x"\n[[nodes]]\nname = "a"\nlog = "/y"\n', ":7: nodes[1].name:", "names two nodes"),
    ('[[nodes]]\nname = "a"\nlog = "/x"\ngpus = "dcgm"\n', ":6: nodes[0].gpus:", "exporter"),
    ('[[nodes]]\nname = "a"\nlog = "/x"\nlog_cmd = "ssh a tail -F /x"\n', ":6: nodes[0].log_cmd:", "not both"),
    ('[[nodes]]\nname = "a b"\nlog = "/x"\n', ":4: nodes[0].name:", "letters"),
])
def test_bad_nodes_table_is_one_line_naming_file_line_and_key(tmp_path: Path, body: str, where: str,
                                                               says: str) -> None:
    with pytest.raises(ProfileError) as err:
        parse_profile('[server]\nurl = "http://127.0.0.1:1/health"\n' + body, tmp_path / "nodes.toml")
    msg = str(err.value)
    assert "\n" not in msg and msg.startswith(str(tmp_path / "nodes.toml"))
    assert where in msg and says in msg, msg


def test_server_command_beside_nodes_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ProfileError, match=r"nodes.toml:2: server.command: with \[\[nodes\]\]"):
        parse_profile('[server]\ncommand = "x"\n[[nodes]]\nname = "a"\nlog = "/x"\n', tmp_path / "nodes.toml")


# ---- the aggregate (pure) -----------------------------------------------------------------------

def _snap(state: State, phase: str | None = PHASE_LOADING, **kw: object) -> Snapshot:
    base = Readiness(ReadinessConfig(), 0.0).snapshot(1.0)
    return replace(base, state=state, phase=phase, **kw)  # type: ignore[arg-type]


def _crash(text: str) -> Event:
    return Event(kind=Kind.CRASH, rule_id="r", summary=text, line_no=3, text=text, phase=None)


def test_aggregate_ready_only_when_the_head_answers_and_no_node_crashed() -> None:
    ready = _snap(State.READY, "ready", detail="GET /health: 200")
    assert verdict_of([NodeView("n0", ready), NodeView("n1", _snap(State.STARTING))]).state is State.READY
    assert verdict_of([NodeView("n0", _snap(State.STARTING)), NodeView("n1", ready)]).state is State.STARTING
    # the head answers but node1's log has said nothing yet: not READY (it may be down)
    v = verdict_of([NodeView("n0", ready), NodeView("n1", _snap(State.WAITING, None))])
    assert v.state is State.STARTING and "waiting for the log of n1" in v.headline
    crashed = _snap(State.CRASHED, cause=_crash("RuntimeError: NCCL error"))
    v = verdict_of([NodeView("n0", ready), NodeView("n1", crashed)])
    assert (v.state, v.node) == (State.CRASHED, "n1")
    assert v.headline.startswith("CRASHED on n1: RuntimeError: NCCL error")


def test_aggregate_stalled_names_the_node_behind() -> None:
    ahead = _snap(State.STALLED, PHASE_LOADING, since_activity=50.0)
    behind = _snap(State.STALLED, PHASE_INIT_DIST, since_activity=40.0)
    v = verdict_of([NodeView("n0", ahead), NodeView("n1", behind)])
    assert (v.state, v.node) == (State.STALLED, "n1")
    assert "n1 is behind (init distributed" in v.headline and "n0 stalled in loading weights" in v.headline
    # the head timed out waiting; the verdict names the node it waited for, still stalled
    v = verdict_of([NodeView("n0", _snap(State.TIMED_OUT, PHASE_INIT_DIST)), NodeView("n1", behind)])
    assert (v.state, v.node) == (State.TIMED_OUT, "n1") and v.headline.startswith("TIMED OUT: n1 in init distributed")
    # one node still moving, the other silent: still STALLED, naming the silent one's lag
    v = verdict_of([NodeView("n0", _snap(State.STARTING, PHASE_LOADING)), NodeView("n1", behind)])
    assert (v.state, v.node) == (State.STALLED, "n1")


# ---- wait on two watched nodes (attach only: each a log file) -------------------------------------

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def test_wait_names_the_node_whose_log_crashed(tmp_path: Path) -> None:
    """...and records one bundle per node, named after that node's log, with that node's verdict."""
    from symmtui.bundle import store
    from symmtui.bundle.format import read_bundle

    a, b = tmp_path / "a.log", tmp_path / "b.log"
    shutil.copyfile(FIXTURES / "sglang-tp8-ready.log", a)
    shutil.copyfile(FIXTURES / "sglang-tp8-symm-mem-keyerror.log", b)
    text = (f'[server]\ntimeout = 20\n[[nodes]]\nname = "gpu-a"\nlog = "{a}"\n'
            f'[[nodes]]\nname = "gpu-b"\nlog = "{b}"\n')
    cfg = tmp_path / "nodes.toml"
    cfg.write_text(text)
    waited = run_cli("wait", "--config", str(cfg), timeout=60)
    assert waited.returncode == 1, waited.stdout + waited.stderr
    out = waited.stdout
    assert "gpu-a [" in out and "gpu-b [" in out
    assert "CRASHED on gpu-b after" in out and "KeyError: 12 at torch_symm_mem.py:83" in out, out
    assert "next:  run `symmtui patch apply` to apply the SM120 patch" in out  # the crashed node's own diagnosis
    assert out.rstrip().endswith("nodes: gpu-a ready, gpu-b crashed")
    finals = {}
    for log in (a, b):
        found = store.newest(stems={store.stem(log, "")})
        assert found is not None, f"no bundle of {log}"
        final = read_bundle(found).final
        assert final is not None, f"no verdict in {log}'s bundle"
        finals[log.name] = final
    assert (finals["a.log"]["state"], finals["b.log"]["state"]) == ("ready", "crashed"), finals
    assert "KeyError: 12" in json.dumps(finals["b.log"]["cause"])


def test_wait_on_a_nodes_profile_refuses_a_single_log_option(tmp_path: Path) -> None:
    cfg = tmp_path / "nodes.toml"
    cfg.write_text('[server]\n[[nodes]]\nname = "a"\nlog = "/x/a.log"\n')
    waited = run_cli("wait", "--config", str(cfg), "--log-cmd", "ssh a tail -F /x/a.log")
    assert waited.returncode == 2 and waited.stdout == ""
    assert waited.stderr.count("\n") == 1 and "each node names its own log; drop --log/--log-cmd/--pid" in waited.stderr


# ---- two nodes over real ssh --------------------------------------------------------------------

@pytest.fixture(scope="module")
def sshd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalSshd]:
    daemon = start_sshd(tmp_path_factory.mktemp("sshd"))
    try:
        yield daemon
    finally:
        daemon.stop()


def _node_toml(sshd: LocalSshd, tmp: Path, port: int, *, dead: str | None = None, stall: int = 60,
               log_cmd: bool = False) -> Path:
    """A 2-node profile: each node's launch is `ssh node python -m symmtui.demo.server ... --node-rank N`.

    ``log_cmd``: node1's server writes its log on the "remote" side (a redirect run by the remote shell) and
    node1's log is read back with ``log_cmd = "ssh node tail -n +1 -F FILE"``. The nodes meet in distributed
    init (``--rendezvous``, as torch's does): without it node0 went READY before node1's log spoke on a
    loaded machine."""
    server = shlex.join([sys.executable, "-m", "symmtui.demo.server", "--speed", "400", "--shards", "3",
                         "--tp", "4", "--nnodes", "2", "--port", str(port), "--dist-init-addr",
                         f"127.0.0.1:{free_port()}", "--rendezvous"])
    lines = ["[server]", f'url = "http://127.0.0.1:{port}/health"', f"log_dir = {json.dumps(str(tmp / 'logs'))}",
             "timeout = 60", f"stall = {stall}", "grace = 2"]
    for rank, name in enumerate(("node0", "node1")):
        host = dead if dead is not None and rank == 1 else "node"
        status = tmp / f"status-{rank}.json"
        ssh = sshd.ssh_text(host)
        remote_log = tmp / "remote-node1.log"
        redirect = f" '>' {remote_log} '2>&1'" if log_cmd and rank == 1 else ""
        lines += ["[[nodes]]", f'name = "{name}"',
                  "launch = " + json.dumps(f"{ssh} {server} --node-rank {{node_rank}} --status-file {status}{redirect}"),
                  "stop = " + json.dumps(f"{ssh} {shlex.quote(sys.executable)} {STOP_STATUS} {status}")]
        if redirect:
            lines.append("log_cmd = " + json.dumps(f"{ssh} tail -n +1 -F {remote_log}"))
    path = tmp / "symmtui.toml"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_two_nodes_launch_ready_and_stop_over_ssh(sshd: LocalSshd, tmp_path: Path) -> None:
    cfg = _node_toml(sshd, tmp_path, free_port())
    try:
        launched = run_cli("launch", "--config", str(cfg), timeout=60)
        assert launched.returncode == 0, launched.stdout + launched.stderr
        out = launched.stdout
        assert "node0 [" in out and "node1 [" in out, out  # per-node phase lines, named
        assert out.count("READY") == 1 and "nodes: node0 ready, node1" in out, out
        # node1's log came through ssh: its ranks are TP2, TP3 (the second half of --tp 4), and no HTTP
        log1 = (tmp_path / "logs" / "node1" / "latest.log").read_text()
        assert "TP3] Init torch distributed begin." in log1 and "TP0]" not in log1 and "fired up" not in log1
    finally:
        stopped = run_cli("stop", "--config", str(cfg))
    assert stopped.returncode == 0, stopped.stdout + stopped.stderr
    assert "node0: stop command done" in stopped.stdout and "node1: stop command done" in stopped.stdout


def test_a_node_log_read_through_log_cmd_over_ssh(sshd: LocalSshd, tmp_path: Path) -> None:
    cfg = _node_toml(sshd, tmp_path, free_port(), log_cmd=True)
    try:
        launched = run_cli("launch", "--config", str(cfg), timeout=60)
        assert launched.returncode == 0, launched.stdout + launched.stderr
        assert "node1: launched pid" in launched.stderr and "tail -n +1 -F" in launched.stderr
        # node1's phases came from `ssh node tail -F` of the file its server wrote on the far side
        assert "node1 [" in launched.stdout and "nodes: node0 ready, node1" in launched.stdout, launched.stdout
        assert not (tmp_path / "logs" / "node1" / "latest.log").read_text().strip()  # its launch printed nothing
    finally:
        stopped = run_cli("stop", "--config", str(cfg))
    assert stopped.returncode == 0, stopped.stdout + stopped.stderr


def test_an_unreachable_node_crashes_the_launch_and_is_reported_by_stop(sshd: LocalSshd, tmp_path: Path) -> None:
    cfg = _node_toml(sshd, tmp_path, free_port(), dead="deadnode")
    try:
        launched = run_cli("launch", "--config", str(cfg), timeout=60)
        assert launched.returncode == 1, launched.stdout + launched.stderr
        assert "CRASHED on node1" in launched.stdout, launched.stdout
        assert "Connection refused" in launched.stdout  # ssh's own words, from node1's log
    finally:
        stopped = run_cli("stop", "--config", str(cfg))
    assert stopped.returncode == 5, stopped.stdout + stopped.stderr
    assert "node0: stop command done" in stopped.stdout  # the reachable node is stopped all the same
    line = next(ln for ln in stopped.stdout.splitlines() if ln.startswith("node1: not stopped"))
    assert "exited 255" in line and "Connection refused" in line
    assert "symmtui: error: not every node was stopped (node1)" in stopped.stderr


# ---- GPUs of two nodes from two real HTTP exposition endpoints ---------------------------------------

def test_gpus_of_two_nodes_read_from_two_exposition_endpoints_grouped_by_node(tmp_path: Path) -> None:
    import os

    from symmtui.demo.exposition import TOTAL_MIB, ExpositionServer
    from symmtui.session.gpus import open_gpu_source
    from symmtui.session.spec import GpuPlan

    status0 = tmp_path / "status-0.json"
    status0.write_text(json.dumps({"pid": os.getpid(), "state": "loading", "memory_fraction": 0.44}))
    ends = [ExpositionServer("gpu-a", status0, gpus=2), ExpositionServer("gpu-b", tmp_path / "none.json", gpus=2)]
    try:
        text = "".join(f'[[nodes]]\nname = "{n}"\nlog = "/x/{n}.log"\ngpus = "{e.url}"\n'
                       for n, e in zip(("node0", "node1"), ends, strict=True))
        profile = parse_profile('[server]\nurl = "http://127.0.0.1:1/health"\n' + text, tmp_path / "p.toml")
        # the 2 s default: a loaded machine's first GET took 3-4 s
        source = open_gpu_source(GpuPlan(per_node=True, timeout=30), profile, None)
        assert source is not None
        try:
            reading = source.read()
        finally:
            source.close()
    finally:
        for e in ends:
            e.close()
    assert reading.unavailable_reason is None
    assert [(i.host, i.host_index, i.index) for i in reading.infos] == [
        ("node0", 0, 0), ("node0", 1, 1), ("node1", 0, 2), ("node1", 1, 3)]  # the node's name, not the exporter's
    used = [s.memory_used for s in reading.samples]
    assert used[:2] == [int(TOTAL_MIB * 0.44) * 2**20] * 2 and used[2:] == [0, 0]  # node1's server is not running


# ---- a node that is never heard: 124 naming it, never READY ---------------------------------------

@pytest.mark.parametrize("how", ["hangs", "refused"])
def test_wait_on_a_node_whose_ssh_hangs_or_is_refused_times_out_naming_it(sshd: LocalSshd, tmp_path: Path,
                                                                        how: str) -> None:
    """gpu-a's log says READY; gpu-b's log comes through ssh that connects and stays silent, or that exits 255
    ("Connection refused", restarted with backoff): the verdict is TIMED OUT on gpu-b (124), never READY."""
    a = tmp_path / "a.log"
    shutil.copyfile(FIXTURES / "sglang-tp8-ready.log", a)
    log_cmd = f"{sshd.ssh_text('node')} sleep 60" if how == "hangs" else f"{sshd.ssh_text('deadnode')} tail -F /x.log"
    cfg = tmp_path / "pair.toml"
    cfg.write_text(f'[server]\ntimeout = 3\n[[nodes]]\nname = "gpu-a"\nlog = "{a}"\n'
                   f'[[nodes]]\nname = "gpu-b"\nlog_cmd = {json.dumps(log_cmd)}\n')
    waited = run_cli("wait", "--config", str(cfg), "--no-record", timeout=60)
    out = waited.stdout
    assert waited.returncode == 124, out + waited.stderr
    assert "TIMED OUT on gpu-b after" in out and "READY after" not in out, out
    assert out.rstrip().endswith("nodes: gpu-a ready, gpu-b timed out"), out
    if how == "refused":
        assert "Connection refused" in out  # ssh's own words, among gpu-b's last lines


def test_launch_with_a_node_whose_ssh_hangs_times_out_naming_it(sshd: LocalSshd, tmp_path: Path) -> None:
    """The head's server comes up; node1's launch is an ssh that connects and prints nothing: 124 on node1."""
    port = free_port()
    server = shlex.join([sys.executable, "-m", "symmtui.demo.server", "--speed", "400", "--shards", "3", "--tp", "2",
                         "--port", str(port)])
    cfg = tmp_path / "symmtui.toml"
    cfg.write_text("\n".join([
        "[server]", f'url = "http://127.0.0.1:{port}/health"', f"log_dir = {json.dumps(str(tmp_path / 'logs'))}",
        "timeout = 8", "grace = 2",
        "[[nodes]]", 'name = "node0"', "launch = " + json.dumps(server),
        "[[nodes]]", 'name = "node1"', "launch = " + json.dumps(f"{sshd.ssh_text('node')} sleep 60"), ""]))
    try:
        launched = run_cli("launch", "--config", str(cfg), "--no-record", timeout=60)
        out = launched.stdout
        assert launched.returncode == 124, out + launched.stderr
        assert "TIMED OUT on node1 after" in out and "READY after" not in out, out
    finally:
        stopped = run_cli("stop", "--config", str(cfg))
    assert stopped.returncode == 0, stopped.stdout + stopped.stderr
