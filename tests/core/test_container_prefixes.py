"""Prefixes container runtimes and log collectors add (`docker logs -t`, `kubectl logs --timestamps`, compose,
journald): kept in the line as shown, skipped for matching, ranks and timestamps read behind them."""

from __future__ import annotations

import calendar

from symmtui.judge.ranks import rank_of_line
from symmtui.logs.lineparts import container_body, split_prefix

# `docker logs -t` (openSUSE/supportutils#196)
DOCKER_T = "2024-04-09T17:33:12.238986028Z nginx: [emerg] host not found in upstream in /etc/nginx/conf.d/proxy.conf:6"
# `kubectl logs --timestamps` (Boostport/kubernetes-vault#41)
KUBECTL_T = ('2017-05-18T18:16:07.094861927Z time="2017-05-18T18:16:07Z" level=debug msg="Attempting to push '
             'wrapped secret_id to pod (sample-app-1906356738-mm46h)."')
# vLLM in Docker with timestamps (vllm-project/vllm#25468)
VLLM_T = ("2025-09-23T09:09:40.158161045Z INFO 09-23 02:09:40 [config.py:2195] Chunked prefill is enabled with "
          "max_num_batched_tokens=2048.")
# journald's short format (kubernetes/kubernetes#43753)
JOURNAL = ("Mar 28 13:23:08 dev-master-003 kube-apiserver: I0328 15:23:08.640872   15002 panics.go:76] GET "
           "/api/v1/namespaces/kube-system/endpoints/kube-scheduler: (1.923651ms) 200")
# `docker compose logs` (sgl-project/sglang#12496)
COMPOSE = "sglang-1  | [2025-11-01 16:50:36 TP1] Setup Custom allreduce failed with CUDART error: peer access is " \
          "not supported between these two devices. To silence this warning, specify --disable-custom-all-reduce " \
          "explicitly."


def test_runtime_stamps_are_skipped_and_read_as_the_lines_time() -> None:
    p = split_prefix(DOCKER_T)
    assert p.body.startswith("nginx: [emerg] host not found")
    assert p.ts == calendar.timegm((2024, 4, 9, 17, 33, 12)) + 0.238986028
    assert split_prefix(KUBECTL_T).body.startswith('time="2017-05-18T18:16:07Z" level=debug')
    p = split_prefix(VLLM_T)  # the stamp, then vLLM's own header: both skipped, the dialect seen
    assert p.body == "Chunked prefill is enabled with max_num_batched_tokens=2048." and p.dialect == "vllm"


def test_journald_prefix_is_skipped() -> None:
    pre = split_prefix(JOURNAL)  # journald's layer, then the program's own glog header (any.toml)
    assert pre.body.startswith("GET /api/v1/namespaces/kube-system") and pre.level == "info"
    assert container_body(JOURNAL).startswith("I0328 15:23:08.640872")


def test_compose_names_and_stamps_stack_and_the_rank_is_read_behind_them() -> None:
    assert container_body(COMPOSE).startswith("[2025-11-01 16:50:36 TP1] Setup Custom")
    assert rank_of_line(container_body(COMPOSE)) is not None
    # `docker compose logs -t` puts the stamp after the service name: the two shapes above, stacked
    stacked = "sglang-1  | " + DOCKER_T.split(" ", 1)[0] + " " + COMPOSE.split("| ", 1)[1]
    p = split_prefix(stacked)
    assert p.key == "TP1" and p.rank == 1 and p.dialect == "sglang"
    assert p.body.startswith("Setup Custom allreduce failed")
    assert container_body(stacked) == COMPOSE.split("| ", 1)[1]


def test_a_stamp_with_an_offset_is_converted_to_utc() -> None:
    line = "2024-04-09T19:33:12+02:00 " + DOCKER_T.split(" ", 1)[1]  # `journalctl -o short-iso` style offset
    assert split_prefix(line).ts == calendar.timegm((2024, 4, 9, 17, 33, 12))


def test_plain_lines_are_left_alone() -> None:
    for line in ("[2025-11-01 16:50:36 TP0] sglang is using nccl==2.27.3", "INFO:     Started server process [1]",
                 "Traceback (most recent call last):", ""):
        assert container_body(line) is line
