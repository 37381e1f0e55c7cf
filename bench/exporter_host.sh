#!/usr/bin/env bash
# On a GPU host without network: start nvitop-exporter, read it with `symmtui gpus --source`, read NVML
# with `symmtui gpus` and ask nvidia-smi, then compare memory and utilisation per GPU.
# Wheels come from WHEELS (default .whl/; made where there is network:
#   pip download nvitop-exporter prometheus_client textual watchfiles rich nvidia-ml-py psutil httpx py-spy \
#     --only-binary=:all: --python-version 3.12 -d WHEELS).
# Usage: bench/exporter_host.sh [OUT_DIR]   (writes the exposition, the three readings and the comparison)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=${1:-${OUT:-/tmp/symmtui-exporter-host}}
WHEELS=${WHEELS:-$ROOT/.whl}
PORT=${PORT:-18917}
PY=${PYTHON:-python3}
mkdir -p "$OUT"
# Wheels are zip files: unpacked side by side they are an install (no pip or venv needed on the host).
SITE=$(mktemp -d)/site
mkdir -p "$SITE"
for w in "$WHEELS"/*.whl; do "$PY" -m zipfile -e "$w" "$SITE"; done
export PYTHONPATH=$SITE:$ROOT
# A fixed host label, so the kept exposition names no real machine.
"$PY" -m nvitop_exporter --bind-address 127.0.0.1 --port "$PORT" --hostname gpu-node-1 --interval 1 \
    >"$OUT/nvitop-exporter.log" 2>&1 &
EXPORTER=$!
trap 'kill $EXPORTER 2>/dev/null || true; wait $EXPORTER 2>/dev/null || true' EXIT
URL=http://127.0.0.1:$PORT/metrics
if [ -n "${LOAD:-}" ]; then  # LOAD=1: a torch process holds ~20 GiB on GPU 0 and keeps it busy meanwhile
    "$PY" -c 'import time, torch
x = torch.empty(20 << 30, dtype=torch.uint8, device="cuda")
a = torch.randn(8192, 8192, device="cuda")
end = time.time() + 90
while time.time() < end:
    for _ in range(50):
        a = (a @ a).clamp_(-1, 1)
    torch.cuda.synchronize()' &
    LOADER=$!
    trap 'kill $EXPORTER $LOADER 2>/dev/null || true; wait 2>/dev/null || true' EXIT
    until nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -i 0 | awk '{exit !($1 > 20000)}'; do sleep 0.5; done
fi
"$PY" - "$URL" "$OUT/nvitop-exporter.prom" <<'EOF'
import sys, time, urllib.request
url, dest = sys.argv[1], sys.argv[2]
deadline = time.monotonic() + 60
while True:
    try:
        body = urllib.request.urlopen(url, timeout=2).read()
    except OSError:
        if time.monotonic() > deadline:
            raise
        time.sleep(0.5)
        continue
    if b"gpu_memory_used" in body:
        break
    time.sleep(0.5)
time.sleep(2.5)  # a couple of the exporter's 1 s rounds, so utilisation is a current value
open(dest, "wb").write(urllib.request.urlopen(url, timeout=2).read())
EOF
S="$PY -m symmtui"
nvidia-smi --query-gpu=index,uuid,memory.total,memory.reserved,memory.used,memory.free,utilization.gpu,temperature.gpu,power.draw \
    --format=csv,noheader,nounits >"$OUT/nvidia-smi.csv"
$S gpus --source "$URL" --json >"$OUT/source.json"
$S gpus --no-topo --json >"$OUT/nvml.json"
nvidia-smi --query-gpu=index,utilization.gpu --format=csv,noheader,nounits >"$OUT/nvidia-smi-after.csv"
$S gpus --source "$URL" >"$OUT/source.txt"
$S gpus --no-topo >"$OUT/nvml.txt"
"$PY" - "$OUT" <<'EOF' | tee "$OUT/compare.txt"
import csv, json, sys
out = sys.argv[1]
src = json.load(open(f"{out}/source.json"))["gpus"]
nv = json.load(open(f"{out}/nvml.json"))["gpus"]
smi = list(csv.reader(open(f"{out}/nvidia-smi.csv")))
print(f"{'GPU':>3} {'used MiB smi/nvml/exp':>24} {'total MiB smi/nvml/exp':>26} {'util % smi/nvml/exp':>20} {'temp C smi/nvml/exp':>20}")
bad = 0
for i, row in enumerate(smi):
    r = [c.strip() for c in row]
    e = next(g for g in src if g["uuid"] == r[1])
    n = next(g for g in nv if g["uuid"] == r[1])
    used = (int(r[4]), n["memory"]["used_mib"], e["memory"]["used_mib"])
    total = (int(r[2]), n["memory"]["total_mib"], e["memory"]["total_mib"])
    util = (int(r[6]), n["utilization_gpu_pct"], e["utilization_gpu_pct"])
    temp = (int(r[7]), n["temperature_c"], e["temperature_c"])
    print(f"{r[0]:>3} {'/'.join(map(str, used)):>24} {'/'.join(map(str, total)):>26} {'/'.join(map(str, util)):>20} {'/'.join(map(str, temp)):>20}")
    bad += len(set(used)) > 1 or len(set(total)) > 1
print("memory: the three agree on every GPU" if not bad else f"memory: {bad} GPU(s) disagree")
EOF
