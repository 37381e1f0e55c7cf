"""Webhooks against a real HTTP server on 127.0.0.1: the ntfy, Slack and JSON bodies, retries, the bounded
flush, and URLs (which carry tokens) never printed whole."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from symmtui.errors import UserError
from symmtui.judge.board import board_of
from symmtui.judge.readiness import Snapshot
from symmtui.judge.verdict import NodeView, findings, ordered_events
from symmtui.launch.notifyconf import NotifyConfig, Webhook, redact
from symmtui.launch.profile import parse_profile
from symmtui.notify.message import VerdictNote
from symmtui.notify.notifier import Notifier
from symmtui.session.messages import VerdictReached
from tests.notify.kit import KEYERROR_LOG, READY_LOG, TOKEN, Receiver, receiver, snapshot_of


@pytest.fixture(scope="module")
def hooks() -> Iterator[Receiver]:
    with receiver() as rec:
        yield rec


def _tell(n: Notifier, snap: Snapshot, *, launch_id: str | None = None, log_path: str | None = None) -> None:
    """The verdict of ``snap`` as the Session posts it (its findings from the shipped rules). A fixture log fed at
    once: its "after" is on the log's own clock (READY 481.0 s, CRASHED 14.0 s after the first line), as the
    Board's figure, which the dashboard and `wait` show too."""
    verdict = board_of([NodeView("gpu-7", snap, None, findings(ordered_events(snap)))])
    n.observe(VerdictReached(verdict, 0, launch_id, log_path))


def _notifier(*hooks: Webhook, timeout: float = 2.0, retries: int = 0) -> tuple[Notifier, list[str]]:
    warnings: list[str] = []
    cfg = NotifyConfig(webhooks=hooks, timeout=timeout, retries=retries, bell=False, desktop=False)
    return Notifier(cfg, name="eagle3/symmtui.toml", host="gpu-7", warn=warnings.append), warnings


def test_ntfy_body_goes_to_the_server_root_with_the_topic(hooks: Receiver) -> None:
    before = len(hooks.got)
    n, warnings = _notifier(Webhook(hooks.url(f"/ntfy/glm5-bringup?auth={TOKEN}"), "ntfy"))
    _tell(n, snapshot_of(READY_LOG), launch_id="L1", log_path="/logs/latest.log")
    n.finish()
    got = hooks.wait_for(before + 1)[-1]
    assert got.path == f"/ntfy/?auth={TOKEN}"  # ntfy's JSON publishing: POST to the root, topic in the body
    assert got.body == {"topic": "glm5-bringup", "title": "symmtui: READY · eagle3/symmtui.toml on gpu-7",
                        "message": "READY after 481.0 s", "priority": 3, "tags": ["white_check_mark"]}
    assert got.headers["Content-Type"] == "application/json"
    assert warnings == []


def test_slack_body_carries_the_cause_and_the_next_step_escaped(hooks: Receiver) -> None:
    before = len(hooks.got)
    n, warnings = _notifier(Webhook(hooks.url(f"/services/T000/B000/{TOKEN}"), "slack"))
    _tell(n, snapshot_of(KEYERROR_LOG))
    n.finish()
    text = hooks.wait_for(before + 1)[-1].body["text"]
    assert isinstance(text, str)
    head, first, *rest = text.split("\n")
    assert head == "*symmtui: CRASHED · eagle3/symmtui.toml on gpu-7*"
    assert first == "CRASHED after 14.0 s: KeyError: 12 at torch_symm_mem.py:83 (8 ranks)"
    assert rest and rest[0].startswith("next: run `symmtui patch apply` to apply the SM120 patch")
    assert "press p" not in text  # a message read away from the dashboard names the command, not its key
    assert "<" not in text and ">" not in text.replace("&gt;", "")  # Slack's control characters escaped
    assert warnings == []


def test_json_body_has_the_verdict_fields(hooks: Receiver) -> None:
    before = len(hooks.got)
    n, _ = _notifier(Webhook(hooks.url("/hook"), "json"))
    _tell(n, snapshot_of(KEYERROR_LOG), launch_id="L2", log_path="/logs/a.log")
    n.finish()
    body = hooks.wait_for(before + 1)[-1].body
    assert body["state"] == "CRASHED" and body["verdict"] == "crashed" and body["launch_id"] == "L2"
    assert body["cause"] == "KeyError: 12 at torch_symm_mem.py:83 (8 ranks)" and body["log"] == "/logs/a.log"
    assert body["host"] == "gpu-7" and body["phase"] == "init distributed" and body["elapsed"] == 14.0


def test_500_then_timeout_is_one_warning_line_without_the_token(hooks: Receiver) -> None:
    hooks.plan["/bad/" + TOKEN] = ["500", "hang"]
    n, warnings = _notifier(Webhook(hooks.url(f"/bad/{TOKEN}"), "json"), timeout=0.3, retries=1)
    _tell(n, snapshot_of(READY_LOG))
    n.finish()
    assert warnings == [f"webhook http://127.0.0.1:{hooks.port}/… failed: HTTP 500, then no answer within 0.3 s "
                        "(2 attempts)"]


def test_finish_waits_at_most_its_bound_for_a_webhook_that_never_answers(hooks: Receiver) -> None:
    hooks.plan["/never"] = ["hang"]
    n, warnings = _notifier(Webhook(hooks.url(f"/never?token={TOKEN}"), "json"), timeout=30, retries=3)
    _tell(n, snapshot_of(READY_LOG))
    t0 = time.monotonic()
    n.finish(bound=0.2)
    assert time.monotonic() - t0 < 2.0  # the bound, not the webhook's 30 s timeout
    assert warnings == [f"webhook http://127.0.0.1:{hooks.port}/…: no answer within 0.2 s of the verdict; "
                        "not waiting for it"]


def test_redact_keeps_only_scheme_host_and_port() -> None:
    assert redact(f"https://hooks.slack.com/services/T0/B0/{TOKEN}") == "https://hooks.slack.com/…"
    assert redact(f"https://user:{TOKEN}@ntfy.example:8443") == "https://ntfy.example:8443/…"
    assert redact("https://example.com") == "https://example.com"


def _profile(tmp_path: Path, notify: str) -> str:
    text = f'[server]\nlog = "{tmp_path / "server.log"}"\n\n[notify]\n{notify}\n'
    try:
        parse_profile(text, tmp_path / "symmtui.toml")
    except UserError as exc:
        return str(exc)
    return "ok"


@pytest.mark.parametrize(("notify", "error"), [
    (f'webhook = "ftp://example.com/{TOKEN}"', "notify.webhook: ftp://example.com/…: must be an http:// or https://"),
    ('webhook = "https://ntfy.sh/"\nformat = "ntfy"', "an ntfy webhook ends in its topic"),
    (f'webhook = "https://x.example/{TOKEN}"\nformat = "teams"', "notify.format: must be one of 'ntfy', 'slack', 'json'"),
    ('timeout = 0', "notify.timeout: must be a number of seconds above 0"),
    ('on = ["ready", "exploded"]', "notify.on: must be a list of verdicts"),
    ('webhok = "https://x.example/"', "notify.webhok: unknown key"),
])
def test_bad_notify_tables_are_one_line_naming_the_key(tmp_path: Path, notify: str, error: str) -> None:
    message = _profile(tmp_path, notify)
    assert error in message and TOKEN not in message


def test_a_notify_table_parses_with_formats_guessed_from_the_host(tmp_path: Path) -> None:
    text = (f'[server]\nlog = "{tmp_path / "s.log"}"\n[notify]\n'
            f'webhook = ["https://ntfy.sh/topic", "https://hooks.slack.com/services/{TOKEN}", "https://x.example/h"]\n'
            'retries = 0\nbell = false\non = ["crashed"]\n')
    cfg = parse_profile(text, tmp_path / "symmtui.toml").notify
    assert cfg is not None
    assert [h.format for h in cfg.webhooks] == ["ntfy", "slack", "json"]
    assert (cfg.retries, cfg.bell, cfg.desktop, cfg.on) == (0, False, True, frozenset({"crashed"}))


HF_SECRET = "hf_" + "QwErTyUiOpAsDfGhJkLzXcVbNm123456"
BEARER_SECRET = "eyBearerS3cretValue0987654321zz"


def test_a_crash_lines_secrets_never_reach_a_webhook_body(hooks: Receiver, tmp_path: Path) -> None:
    # The fixture's traceback with a planted exception line, as a failing hub download would print it
    lines = KEYERROR_LOG.read_text().splitlines()
    first = min(i for i, line in enumerate(lines) if line == "KeyError: 12")  # the cause is the first crash
    lines[first] = (f"requests.exceptions.HTTPError: 401 Client Error for url https://huggingface.co/api/models/x "
                   f"(headers {{'Authorization': 'Bearer {BEARER_SECRET}'}}, token {HF_SECRET}) password=hunter2hunter2")
    log = tmp_path / "server.log"
    log.write_text("\n".join(lines) + "\n")
    snap = snapshot_of(log)
    before = len(hooks.got)
    n, warnings = _notifier(Webhook(hooks.url("/json"), "json"), Webhook(hooks.url("/slack/T/B/x"), "slack"),
                            Webhook(hooks.url("/ntfy/topic"), "ntfy"))
    _tell(n, snap, log_path=f"/logs/run-{HF_SECRET}.log")
    n.finish()
    got = hooks.wait_for(before + 3)[before:]
    import json as _json

    for received in got:
        raw = _json.dumps(received.body)
        assert BEARER_SECRET not in raw and HF_SECRET not in raw and "hunter2hunter2" not in raw, raw
    body = next(r.body for r in got if r.path == "/json")
    assert body["state"] == "CRASHED" and "[REDACTED]" in str(body["cause"]) and "HTTPError" in str(body["cause"])
    assert warnings == []


def test_a_webhook_answering_with_an_endless_body_is_read_no_further_than_the_cap() -> None:
    import http.server
    import threading

    from symmtui.notify.webhook import MAX_ANSWER, deliver
    from tests.httpkit import serving

    sent = [0]
    done = threading.Event()

    class Endless(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:  # noqa: N802
            self.rfile.read(int(self.headers.get("Content-Length", "0")))
            self.send_response(200)
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            chunk = b"%x\r\n%s\r\n" % (65536, b"x" * 65536)
            try:
                while sent[0] < 4 << 30:  # 4 GiB: "endless" for a client without a cap
                    self.wfile.write(chunk)
                    sent[0] += 65536
            except OSError:
                pass
            finally:
                done.set()

        def log_message(self, *args: object) -> None:
            pass

    with serving(Endless) as url:
        why = deliver(Webhook(url + "/hook", "json"), snapshot_note(), timeout=5, retries=0)
        assert done.wait(10)
    assert why is None  # a 200: delivered
    assert sent[0] < 64 * MAX_ANSWER + (16 << 20)  # what the socket buffers held, not gigabytes


def snapshot_note() -> VerdictNote:
    from symmtui.notify.message import note_of

    snap = snapshot_of(READY_LOG)
    note = note_of(board_of([NodeView("h", snap)]), name="n", host="h")
    assert note is not None
    return note
