"""A throwaway sshd on 127.0.0.1 for the multi-node tests: its own host key, user key, config; key-only.

The tests reach "nodes" through real ``ssh`` to this daemon. Nothing of the user's ssh setup is read or
written: the client runs with ``-F <tmp ssh_config>`` (BatchMode, the tmp known_hosts, the tmp key).
sshd missing skips the test, saying so, on a fresh machine and fails it in CI (``tests/sysparts.py``);
an sshd that is there and cannot start is a failure everywhere.
"""

from __future__ import annotations

import os
import pwd
import shlex
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from tests import sysparts

SSHD = sysparts.SSHD
READY_TIMEOUT = 10.0


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class LocalSshd:
    """A running sshd and the client config that reaches it as host alias ``node`` (and ``deadnode``:
    the same, on a port nothing listens on)."""

    root: Path
    port: int
    proc: subprocess.Popen[bytes]
    config: Path

    def ssh(self, host: str = "node") -> list[str]:
        """The ssh argv prefix for ``host`` (``node`` or ``deadnode``)."""
        return ["ssh", "-F", str(self.config), host]

    def ssh_text(self, host: str = "node") -> str:
        return shlex.join(self.ssh(host))

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def start_sshd(root: Path) -> LocalSshd:
    """Make the keys and configs under ``root``, start ``sshd -D -e``, wait until it answers on its port."""
    sysparts.require("sshd")
    root.mkdir(parents=True, exist_ok=True)
    host_key, user_key = root / "host_ed25519", root / "user_ed25519"
    for key in (host_key, user_key):
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True)
    auth = root / "authorized_keys"
    auth.write_bytes(Path(f"{user_key}.pub").read_bytes())
    auth.chmod(0o600)
    if os.geteuid() == 0:
        Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)  # sshd's privilege-separation dir (as Debian's service makes it)
    port = _free_port()
    sshd_config = root / "sshd_config"
    sshd_config.write_text("\n".join([
        "ListenAddress 127.0.0.1",
        f"Port {port}",
        f"HostKey {host_key}",
        f"AuthorizedKeysFile {auth}",
        "PubkeyAuthentication yes",
        "PasswordAuthentication no",
        "KbdInteractiveAuthentication no",
        "PermitRootLogin prohibit-password",
        "StrictModes no",
        "UsePAM no",
        f"PidFile {root / 'sshd.pid'}",
        "LogLevel ERROR",
        "",
    ]))
    known = root / "known_hosts"  # HostKeyAlias 127.0.0.1: one entry serves both ports
    dead = _free_port()
    user = pwd.getpwuid(os.geteuid()).pw_name
    config = root / "ssh_config"
    common = [f"  User {user}", f"  IdentityFile {user_key}", "  IdentitiesOnly yes", f"  UserKnownHostsFile {known}",
              "  StrictHostKeyChecking yes", "  BatchMode yes", "  ConnectTimeout 5", "  LogLevel ERROR",
              "  HostKeyAlias 127.0.0.1"]
    config.write_text("\n".join([
        "Host node", "  HostName 127.0.0.1", f"  Port {port}", *common,
        "Host deadnode", "  HostName 127.0.0.1", f"  Port {dead}", *common, "",
    ]))
    known.write_text(f"127.0.0.1 {' '.join(Path(f'{host_key}.pub').read_text().split()[:2])}\n")
    proc = subprocess.Popen([SSHD, "-D", "-e", "-f", str(sshd_config)], stdin=subprocess.DEVNULL,
                            stderr=open(root / "sshd.err", "wb"))  # noqa: SIM115 - the daemon holds it
    deadline = time.monotonic() + READY_TIMEOUT
    while True:
        if proc.poll() is not None:
            raise AssertionError(f"sshd exited {proc.returncode}: {(root / 'sshd.err').read_text()[-500:]}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                break
        except OSError:
            if time.monotonic() > deadline:
                proc.kill()
                raise AssertionError(f"sshd did not listen on {port} in {READY_TIMEOUT} s") from None
            time.sleep(0.05)
    return LocalSshd(root, port, proc, config)
