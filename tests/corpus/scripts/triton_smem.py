"""A Triton matmul whose tiles need more shared memory than the GPU has (256x256x256 fp16 tiles, 3 stages):
Triton refuses the launch with OutOfResources.

torchrun --nproc_per_node=1 triton_smem.py
"""
from __future__ import annotations

import torch
import triton
import triton.language as tl


@triton.jit
def matmul(a_ptr, b_ptr, c_ptr, M, N, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        a = tl.load(a_ptr + rm[:, None] * K + (k + rk)[None, :])
        b = tl.load(b_ptr + (k + rk)[:, None] * N + rn[None, :])
        acc += tl.dot(a, b)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc.to(tl.float16))


M = N = K = 4096
a = torch.randn((M, K), device="cuda", dtype=torch.float16)
b = torch.randn((K, N), device="cuda", dtype=torch.float16)
c = torch.empty((M, N), device="cuda", dtype=torch.float16)
print(f"triton {triton.__version__}, torch {torch.__version__}, {torch.cuda.get_device_name(0)}", flush=True)
grid = (M // 256, N // 256)
matmul[grid](a, b, c, M, N, K, BLOCK_M=256, BLOCK_N=256, BLOCK_K=256, num_stages=3, num_warps=8)
torch.cuda.synchronize()
print("matmul ran", flush=True)
