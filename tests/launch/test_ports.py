"""Ports: parsed from the health URL; free/held decided by the socket table and a real bind."""

from __future__ import annotations

import socket

import pytest

from symmtui.proc import ports


@pytest.mark.parametrize(
    ("url", "want"),
    [
        ("http://127.0.0.1:30000/health", ("127.0.0.1", 30000)),
        ("http://localhost/health", ("localhost", 80)),
        ("https://gpu-box.example/health", ("gpu-box.example", 443)),
        ("http://[::1]:8000/v1/models", ("::1", 8000)),
        (None, None),
        ("http://127.0.0.1:99999/health", None),
    ],
)
def test_url_port(url: str | None, want: tuple[str, int] | None) -> None:
    assert ports.url_port(url) == want


def test_free_held_and_owner() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        assert not ports.is_free("127.0.0.1", port)  # bound, not listening: a server could not bind it either
        s.listen()
        assert not ports.is_free("127.0.0.1", port)
        assert not ports.is_free("localhost", port)
        owner = ports.port_owner(port)
        assert owner is not None and owner.startswith("pid ")
    assert ports.is_free("127.0.0.1", port) and ports.port_owner(port) is None


def test_time_wait_leftovers_do_not_count_as_held() -> None:
    srv = socket.socket()
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(("127.0.0.1", 0))
    srv.listen()
    port = srv.getsockname()[1]
    cli = socket.create_connection(("127.0.0.1", port))
    conn, _ = srv.accept()
    conn.close()  # the server side closes first: its end goes to TIME_WAIT
    cli.close()
    srv.close()
    assert ports.is_free("127.0.0.1", port)


def test_remote_host_is_not_checked() -> None:
    assert ports.is_free("192.0.2.1", 30000)  # TEST-NET: not ours, nothing to wait for
