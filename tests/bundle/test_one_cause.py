"""One crash, one cause: on a log a process is still writing (the other ranks' copies arrive over the next
second), `wait`'s verdict, the webhook's and the bundle's report all name the settled cause (8 ranks), never
the first copy's ("rank 0")."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from symmtui.bundle.format import SUFFIX
from tests.core.engine_kit import KEYERROR_LOG, env, symmtui_cmd
from tests.notify.kit import TOKEN, receiver

# A writer process: the crash log line by line, 10 ms apart (ranks' copies trickle in; the log is never quiet)
WRITER = """
import sys, time
src, dst = sys.argv[1], sys.argv[2]
with open(dst, "a") as out:
    for line in open(src):
        out.write(line)
        out.flush()
        time.sleep(0.01)
"""


def test_wait_the_webhook_and_the_report_name_the_same_settled_cause(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_text("")
    bundle = tmp_path / f"run{SUFFIX}"
    with receiver() as hooks:
        cfg = tmp_path / "p.toml"
        cfg.write_text(f'[server]\nlog = "{log}"\n[notify]\nbell = false\ndesktop = false\n'
                       f'webhook = "{hooks.url("/hook/" + TOKEN)}"\nformat = "json"\n')
        wait = subprocess.Popen(symmtui_cmd("wait", "--config", str(cfg), "--timeout", "60", "--notify",
                                            "--bundle", str(bundle)),
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env())
        writer = subprocess.run([sys.executable, "-c", WRITER, str(KEYERROR_LOG), str(log)], timeout=120)
        out, err = wait.communicate(timeout=120)
        assert writer.returncode == 0 and wait.returncode == 1, out + err
        got = hooks.wait_for(1, timeout=30)
    m = re.search(r"^CRASHED after [\d.]+ s: (.*)$", out, re.M)
    assert m is not None, out
    printed = m.group(1)
    assert printed == "KeyError: 12 at torch_symm_mem.py:83 (8 ranks)", out
    crashed = [g for g in got if g.body.get("state") == "CRASHED"]
    assert len(crashed) == 1 and crashed[0].body["cause"] == printed, [g.body for g in got]
    report = subprocess.run(symmtui_cmd("report", str(bundle)), capture_output=True, text=True, timeout=60, env=env())
    assert report.returncode == 0, report.stderr
    title = report.stdout.splitlines()[0]
    assert title.endswith(f"CRASHED: `{printed}`"), title
