"""The rule table: every rule matches its real line shape, priorities, user rules, the byte prefilter."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from symmtui.errors import UserError
from symmtui.judge.rules import ByteScanner, Kind, RuleSet, message_part, required_literal, strip_ansi
from symmtui.tables.catalogue import builtin_entries

# catalogue line entry id -> a real-shaped line it must name (first match in table order). Lines quoted from
# public issues say so; the others have the shape the named server prints.
EXAMPLES: list[tuple[str, str]] = [
    ("custom-allreduce-no-p2p", "[2025-10-29 08:00:01 TP0] Setup Custom allreduce failed with CUDART error: peer access is not supported between these two devices. To silence this warning, specify --disable-custom-all-reduce explicitly."),  # sgl-project/sglang#12496
    ("sglang-ready", "[2026-11-29 09:48:04] The server is fired up and ready to roll!"),
    ("uvicorn-startup-complete", "INFO:     Application startup complete."),
    ("serving-request-ok", '[2026-11-29 09:50:01] INFO:     127.0.0.1:51240 - "POST /v1/chat/completions HTTP/1.1" 200 OK'),
    ("serving-get-ok", 'INFO:     172.18.0.5:43002 - "GET /health HTTP/1.1" 200 OK'),  # vllm-project/vllm#16259
    ("serving-request-answered", 'INFO:     127.0.0.1:55504 - "GET / HTTP/1.1" 404 Not Found'),  # vllm-project/vllm#6194
    ("vllm-engine-stats", "INFO 04-08 03:58:25 [loggers.py:87] Engine 000: Avg prompt throughput: 0.0 tokens/s, Avg generation throughput: 0.0 tokens/s, Running: 0 reqs, Waiting: 0 reqs, GPU KV cache usage: 0.0%, Prefix cache hit rate: 0.0%"),  # vllm-project/vllm#16259
    ("sglang-prefill-batch", "[2024-12-09 16:10:51 TP0] Prefill batch. #new-seq: 1, #new-token: 25, #cached-token: 0, cache hit rate: 0.00%, token usage: 0.00, #running-req: 0, #queue-req: 0"),  # sgl-project/sglang#2418
    ("sglang-decode-batch", "[15:58:51 TP0] Decode batch. #running-req: 1, #token: 43, token usage: 0.00, gen throughput (token/s): 0.53, #queue-req: 0"),  # sgl-project/sglang#1467
    ("sglang-token-budget", "[2025-11-30 11:18:05] max_total_num_tokens=2261377, chunked_prefill_size=16384, max_prefill_tokens=16384, max_running_requests=4096, context_len=128000, available_gpu_mem=37.06 GB"),  # sgl-project/sglang PR 11830
    ("model-not-found", "huggingface_hub.errors.RepositoryNotFoundError: 404 Client Error. (Request ID: Root=1-66f4b037)"),
    ("extension-abi-mismatch", "ERROR 10-16 05:20:48 registry.py:264] ImportError: /usr/local/lib/python3.10/dist-packages/flash_attn_2_cuda.cpython-310-x86_64-linux-gnu.so: undefined symbol: _ZN3c105ErrorC2ENS_14SourceLocationENSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEE"),  # vllm-project/vllm#9377
    ("python-exception", "(EngineCore_DP0 pid=60) ERROR 01-12 01:09:14 [core.py:708] triton.compiler.errors.CompilationError: at 1:0: def f()"),
    ("traceback", "[2026-11-29 09:40:17 TP0] Scheduler hit an exception: Traceback (most recent call last):"),
    ("hit-exception", "[2026-11-29 09:40:17 TP3] TpModelWorker hit an exception: boom"),
    ("sm120-symm-mem-keyerror", "KeyError: 12"),
    ("symm-mem-capability-unsupported", "[2026-11-29 09:40:12 TP0] TorchSymmMemCommunicator: Device capability 12 not supported, communicator is not available."),
    ("symm-mem-multicast-unsupported", "torch symmetric memory multicast operations are not supported."),
    ("vllm-symm-mem-sm120", "KeyError: '12.0'"),
    ("deepgemm-sm120", "KeyError: '120a'"),
    ("no-kernel-image", "RuntimeError: CUDA error: no kernel image is available for execution on the device"),
    ("nccl-sm120-shared-mem", "NCCL WARN Error : ncclMaxSharedMem 232448 exceeds device/fn maxSharedMem 101376"),
    ("custom-allreduce-no-p2p", "WARNING 01-02 03:04:05 [custom_all_reduce.py:1] Custom allreduce is disabled because it's not supported on more than two PCIe-only GPUs."),
    ("peer-access-unsupported", "RuntimeError: CUDA error: peer access is not supported between these two devices"),
    ("ptxas-arch-undefined", "ptxas fatal   : Value 'sm_121a' is not defined for option 'gpu-name'"),
    ("flashinfer-no-sm12x-arch", "RuntimeError: No supported CUDA architectures found for major versions [12]."),
    ("trtllm-fmha-unsupported", "RuntimeError: TllmGenFmhaRunner: Unsupported architecture"),
    ("cutlass-scaled-mm-sm120", "RuntimeError: No compiled cutlass_scaled_mm for a compute capability less than CUDA device capability: 120"),
    ("flashinfer-cutlass-moe-sm120", "ValueError: FlashInfer-CUTLASS MoE kernel does not support current device sm_120."),
    ("moe-config-missing", "[2026-11-29 09:47:30 TP0] Using default MoE kernel config. Performance might be sub-optimal! Config file not found at /x/E=128,N=384,device_name=NVIDIA_RTX_PRO_6000.json"),
    ("attention-backend-unsupported", "ValueError: No valid attention backend found for cuda with head_size: 128, dtype: torch.bfloat16, kv_cache_dtype: auto, compute capability not supported"),
    ("unsupported-compute-capability", "ValueError: Unsupported compute capability: 12.0"),
    ("nccl-ras-bind-harmless", "host:1:2 [0] ras/client_support.cc:160 NCCL WARN Call to bind failed: Address already in use"),
    ("port-in-use", "ERROR:    [Errno 98] error while attempting to bind on address ('0.0.0.0', 30000): address already in use"),
    ("hf-gated-401", "huggingface_hub.errors.GatedRepoError: 401 Client Error. (Request ID: Root=1-66f4b037)"),  # ToTheBeginning/PuLID#97
    ("trust-remote-code", "ValueError: Loading pansophic/rocket-3B requires you to execute the configuration file in that repo on your local machine."),  # h2oai/h2o-llmstudio#560
    ("unsupported-architecture", "ValueError: Model architectures ['LlamaForCausalLM'] are not supported for now."),  # vllm-project/vllm#9713
    ("kv-cache-no-memory", "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static."),  # sgl-project/sglang#4330
    ("kv-cache-no-memory", "ValueError: No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when initializing the engine."),  # vllm-project/vllm#10439
    ("kv-cache-too-small", "ValueError: The model's max seq len (4096) is larger than the maximum number of tokens that can be stored in KV cache (3664). Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine."),  # vllm-project/vllm#2418
    ("warmup-request-failed", "[2024-12-13 01:47:34] Initialization failed. warmup error: boom"),
    ("cuda-graph-capture-failed", "Exception: Capture cuda graph failed: RuntimeError: Cannot call CUDAGeneratorImpl::current_seed during CUDA graph capture."),  # sgl-project/sglang#6033
    ("cuda-oom-load", "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB."),
    ("cuda-oom-kv-cache", "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB."),
    ("illegal-memory-access", "RuntimeError: CUDA error: an illegal memory access was encountered"),
    ("cuda-driver-too-old", "RuntimeError: CUDA driver version is insufficient for CUDA runtime version"),
    ("cuda-driver-too-old", "backend-vllm-openai-1  | RuntimeError: Unexpected error from cudaGetDeviceCount(). Did you run some cuda functions before calling NumCudaDevices() that might have already set an error? Error 804: forward compatibility was attempted on non supported HW"),  # vllm-project/vllm#4375
    ("cuda-oom", "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 200.00 GiB. GPU 0 has a total capacity of 139.80 GiB of which 139.29 GiB is free."),  # the H200 (tests/corpus/cases/torch-h200-cuda-oom-torch-empty)
    ("process-killed", "E0325 20:57:27.620000 2606 site-packages/torch/distributed/elastic/multiprocessing/api.py:869] failed (exitcode: -9) local_rank: 5 (pid: 2630) of binary: /root/miniconda3/bin/python"),  # lmzpai/roboMamba#10
    ("torchrun-child-failed", "E0801 13:23:20.000000 32974 torch/distributed/elastic/multiprocessing/api.py:874] failed (exitcode: 1) local_rank: 3 (pid: 33054) of binary: /home/ubuntu/pythonn3.11/bin/python3"),  # OEvortex/unsloth#10
    ("quantization-unsupported", "ERROR 06-08 13:05:39 worker_base.py:148] AttributeError: 'MergedColumnParallelLinear' object has no attribute 'weight'"),  # vllm-project/vllm#3900
    ("model-config-invalid", "(APIServer pid=2994609) pydantic_core._pydantic_core.ValidationError: 1 validation error for ModelConfig"),  # OpenSQZ/MiniCPM-V-CookBook#51
    ("attention-backend-unsupported", 'ERROR 01-11 13:09:40 engine.py:366] RuntimeError: Error in model execution (input dumped to /tmp/err_execute_model_input_20250111-130939.pkl): FlashAttention only supports Ampere GPUs or newer.'),  # vllm-project/vllm#8189
    ("nccl-unhandled-system-error", 'node5:240:240 [6] misc/socket.cc:533 NCCL WARN socketPollConnect: Connect to 10.0.0.4<56849> returned 113(No route to host) errno 115(Operation now in progress)'),  # sgl-project/sglang#3820
    ("cuda-oom-profile-run", '(VllmWorkerProcess pid=67) ERROR 11-05 03:21:52 multiproc_worker_utils.py:233] Exception in worker VllmWorkerProcess while processing method determine_num_available_blocks: CUDA out of memory. Tried to allocate 1.95 GiB. GPU 1 has a total capacity of 22.09 GiB of which 758.44 MiB is free. Process 2751070 has 21.35 GiB memory in use. Of the allocated memory 20.90 GiB is allocated by PyTorch, and 85.19 MiB is reserved by PyTorch but unallocated. If reserved but unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See documentation for Memory Management  (https://pytorch.org/docs/stable/notes/cuda.html#environment-variables), Traceback (most recent call last):'),  # vllm-project/vllm#10034
    ("ray-no-gpu-on-node", "ValueError: Current node has no GPU available. current_node_resource={'accelerator_type:T4': 1.0, 'bundle_group_7_5dae406aeb52bbda8836db50069101000000': 999.999, 'memory': 188995160884.0, 'bundle_group_6_5dae406aeb52bbda8836db50069101000000': 999.999, 'node:74.10.28.48': 1.0, 'bundle_group_5dae406aeb52bbda8836db50069101000000': 1999.998, 'CPU': 112.0, 'object_store_memory': 80997926092.0}. vLLM engine cannot start without GPU. Make sure you have at least 1 GPU available in a node current_node_id='25ce3df78af6f2152950b2eb804c59f55b331e21f8c4f92db852228d' current_ip='74.10.28.48'."),  # vllm-project/vllm#29265
    ("gloo-timeout", "[rank0]: RuntimeError: [/pytorch/third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:78] Timed out waiting 10000ms for recv operation to complete"),  # the H200 (torch-h200-gloo-collective-timeout)
    ("store-timeout", "torch.distributed.DistStoreError: wait timeout after 10000ms, keys: /default_pg/0//cpu//0/1"),  # the H200 (torch-h200-gloo-rank-never-joins)
    ("build-failure", "FileNotFoundError: [Errno 2] No such file or directory: 'ninja'"),  # transformerlab/transformerlab-api#381
    ("nccl-duplicate-gpu", "[rank2]: Duplicate GPU detected : rank 0 and rank 1 both on CUDA device 6000"),  # pytorch/torchtitan#1224
    ("triton-out-of-resources", "triton.runtime.errors.OutOfResources: out of resource: shared memory, Required: 66560, Hardware limit: 65536. Reducing block sizes or `num_stages` may help."),  # vllm-project/vllm#12498
    ("weight-name-mismatch", "ERROR 12-05 20:24:46 engine.py:366] KeyError: 'layers.0.mlp.down_proj.weight_scale'"),  # vllm-project/llm-compressor#959
    ("build-failure", "(Worker_TP3 pid=340106) ERROR 12-10 23:42:18 [multiproc_executor.py:822] torch._inductor.exc.InductorError: CalledProcessError: Command '['/usr/bin/gcc', '/tmp/tmpqxw0ckl9/cuda_utils.c', '-O3', '-shared', '-fPIC', '-Wno-psabi', '-o', '/tmp/tmpqxw0ckl9/cuda_utils.cpython-311-x86_64-linux-gnu.so', '-lcuda']' returned non-zero exit status 1."),  # vllm-project/vllm#30441
    ("build-failure", "RuntimeError: Error building extension 'batch_prefill_with_kv_cache_dtype_q_bf16_dtype_kv_bf16_dtype_o_bf16_dtype_idx_i32_head_dim_qk_128_head_dim_vo_128_posenc_0_use_swa_False_use_logits_cap_False_f16qk_False'"),
    ("nccl-timeout", "[rank3]:[E1029 06:48:05.1 ProcessGroupNCCL.cpp:616] [Rank 3] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1)"),
    ("nccl-unhandled-system-error", "RuntimeError: NCCL error: unhandled system error (run with NCCL_DEBUG=INFO for details)"),  # gpustack/gpustack#2023
    ("build-failure", "nvcc fatal   : Unsupported gpu architecture 'compute_120a'"),
    ("build-failure", "FAILED: batch_prefill_jit_binding.cuda.o"),
    ("build-failure", "subprocess.CalledProcessError: Command '['ninja', '-v']' returned non-zero exit status 1."),
    ("engine-core-init-failed", "RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {}"),
    ("sglang-child-failed", "[2026-11-29 09:40:18] Received sigquit from a child process. It usually means the child failed."),
    ("process-killed", "/bin/sh: line 1: 48213 Killed                  python -m sglang.launch_server"),
    ("native-crash", "Segmentation fault (core dumped)"),
    ("nccl-error", "torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/NCCLUtils.hpp:275, unhandled cuda error"),
    ("cuda-error", "RuntimeError: CUDA error: unspecified launch failure"),  # vllm-project/vllm#27430
    ("device-side-assert", "RuntimeError: CUDA error: device-side assert triggered"),  # sgl-project/sglang#271
    ("python-exception", "KeyError: 'model'"),
    ("python-exception", "RuntimeError: Expected all tensors to be on the same device"),
    ("server-args", "[2026-11-29 09:40:03] server_args=ServerArgs(model_path='/models/x', tp_size=8)"),
    ("vllm-version", "INFO 10-29 06:48:05 [api_server.py:1024] vLLM API server version 0.11.0"),
    ("vllm-api-server-start", "(APIServer pid=1) INFO 10-29 06:49:05 [api_server.py:1] Starting vLLM API server 0 on http://0.0.0.0:8000"),
    ("init-dist-begin", "[2026-11-29 09:40:09 TP0] Init torch distributed begin."),
    ("init-dist-end", "[2026-11-29 09:40:12 TP0] Init torch distributed ends. mem usage=0.42 GB"),
    ("load-weight-begin", "[2026-11-29 09:40:13 TP0] Load weight begin. avail mem=93.21 GB"),
    ("load-weight-end", "[2026-11-29 09:47:23 TP0] Load weight end. type=X, dtype=torch.bfloat16, avail mem=40.87 GB"),
    ("vllm-load-begin", "(Worker_TP0 pid=11) INFO 10-29 06:48:05 [gpu_model_runner.py:1] Starting to load model /m..."),
    ("vllm-load-end", "(Worker_TP0 pid=11) INFO 10-29 06:50:05 [gpu_model_runner.py:2] Model loading took 40.1 GiB and 120 s"),
    ("shards-progress", "Loading safetensors checkpoint shards:  45% Completed | 50/111 [03:12<04:01,  3.95s/it]"),
    ("kv-cache", "[2026-11-29 09:47:25 TP0] KV Cache is allocated. #tokens: 612352, KV size: 29.83 GB"),
    ("memory-pool-end", "[2026-11-29 09:47:25 TP0] Memory pool end. avail mem=9.61 GB"),
    ("cuda-graph-begin", "[2026-11-29 09:47:26 TP0] Capture cuda graph begin. This can take up to several minutes."),
    ("cuda-graph-end", "[2026-11-29 09:47:58 TP0] Capture cuda graph end. Time elapsed: 31.84 s."),
    ("cuda-graph-progress", "Capturing batches (bs=124 avail_mem=9.44 GB):  26%|##      | 6/23 [00:06<00:17,  1.05it/s]"),
    ("uvicorn-started", "[2026-11-29 09:48:01] INFO:     Started server process [48213]"),
    ("uvicorn-running", "[2026-11-29 09:48:01] INFO:     Uvicorn running on http://0.0.0.0:30000 (Press CTRL+C to quit)"),
    ("tgi-args", '2023-02-21T06:28:55.309769Z  INFO text_generation_launcher: Args { model_id: "bigscience/bloom", revision: None, num_shard: 1, quantize: false, max_concurrent_requests: 128, max_input_length: 1000, max_batch_size: 32, max_waiting_tokens: 20, port: 3000, shard_uds_path: "/tmp/text-generation-server", master_addr: "localhost", master_port: 29500, huggingface_hub_cache: None, weights_cache_override: Some("/root/autodl-tmp/bloom"), disable_custom_kernels: false, json_output: false, otlp_endpoint: None, cors_allow_origin: [] }'),  # huggingface/text-generation-inference#79
    ("tgi-shard-starting", "2023-02-21T06:29:05.320211Z  INFO text_generation_launcher: Waiting for shard 0 to be ready..."),  # huggingface/text-generation-inference#79
    ("tgi-router-connected", "2025-05-01T01:31:02.842858Z  INFO text_generation_router::server: router/src/server.rs:2266: Connected"),  # huggingface/text-generation-inference#3203
    ("tgi-shard-failed", "2023-07-07T17:55:43.805488Z ERROR text_generation_launcher: Webserver Crashed"),  # huggingface/text-generation-inference#563
    ("engine-assertion-failed", "ggml.c:1542: GGML_ASSERT(type >= 0 && type < GGML_TYPE_COUNT) failed"),  # ollama/ollama#13325
    ("engine-assertion-failed", "  what():  [TensorRT-LLM][ERROR] Assertion failed: elts_per_rank % elts_per_thread == 0 (/app/tensorrt_llm/cpp/tensorrt_llm/kernels/customAllReduceKernels.cu:324)"),  # triton-inference-server/tensorrtllm_backend#381
    ("uncaught-cpp-exception", "terminate called after throwing an instance of 'std::runtime_error'"),  # InternLM/lmdeploy#698
    ("cuda-error", "[TensorRT-LLM][ERROR] CUDA runtime error in ::cudaMallocAsync(ptr, n, mCudaStream->get()): out of memory (/app/tensorrt_llm/cpp/tensorrt_llm/runtime/tllmBuffers.h:112)"),  # triton-inference-server/tensorrtllm_backend#195
    ("native-crash", "Signal (11) received."),  # triton-inference-server/server#8284
    ("go-panic", "panic: runtime error: invalid memory address or nil pointer dereference"),  # ollama/ollama#4112
    ("go-panic", "2023/12/09 03:04:03 [Recovery] 2023/12/09 - 03:04:03 panic recovered:"),  # ollama/ollama#1049
    ("rust-panic", "thread 'main' panicked at 'Unable to warmup model: Generation(\"Allocation on device 0 would exceed allowed memory. (out of memory)\")', router/src/main.rs:216:18"),  # huggingface/text-generation-inference#563 (its message cut here)
    ("triton-model-loading", 'I0120 08:28:09.425338 2049 model_lifecycle.cc:473] "loading: postprocessing:1"'),  # triton-inference-server/server#7950
    ("triton-service-started", "I0122 09:48:46.347909 1180 grpc_server.cc:2495] Started GRPCInferenceService at 0.0.0.0:8001"),  # triton-inference-server/server#6821
    ("triton-model-load-failed", "| inception_graphdef | 1       | UNAVAILABLE: Not found: model configuration is not provided for model 'inception_graphdef'                   |"),  # triton-inference-server/server#5197
    ("backend-library-missing", 'E0120 08:28:09.425599 2049 model_lifecycle.cc:654] "failed to load \'tensorrt_llm\' version 1: Invalid argument: unable to find backend library for backend \'tensorrtllm\', try specifying runtime on the model configuration."'),  # triton-inference-server/server#7950
    ("kv-cache-no-memory", "RuntimeError: Trying to create tensor with negative dimension -56: [-56, 8, 20, 128]"),  # InternLM/lmdeploy#1362
    ("cuda-oom-load", "ggml_backend_cuda_buffer_type_alloc_buffer: allocating 35533.34 MiB on device 0: cudaMalloc failed: out of memory"),  # ollama/ollama#8447
    ("cache-dir-not-writable", "RuntimeError: Unable to write to NIM_CACHE_PATH (/mnt/models/cache)"),  # NVIDIA/nim-deploy#16
    ("gpu-memory-busy", "(EngineCore_DP0 pid=17374) ERROR 09-28 15:47:24 [core.py:718] ValueError: Free memory on device (3.22/4.0 GiB) on startup is less than desired GPU memory utilization (0.9, 3.6 GiB). Decrease GPU memory utilization or reduce GPU memory used by other processes."),  # vllm-project/vllm#25837
    ("trtllm-version", "[TensorRT-LLM] TensorRT LLM version: 1.2.0rc2"),  # NVIDIA/TensorRT-LLM#9680
    ("engine-core-init-failed", "RuntimeError: Executor worker returned error"),  # NVIDIA/TensorRT-LLM#7706
    ("llamacpp-listening", "0.08.526.749 I srv  llama_server: listening on http://127.0.0.1:8080"),  # ggml-org/llama.cpp#25121
    ("llamacpp-model-loading", "llama_model_load: vocab only - skipping tensors"),  # ollama/ollama#8492
    ("llamacpp-request-ok", '{"function":"log_server_request","level":"INFO","line":2737,"method":"POST","msg":"request","params":{},"path":"/completion","remote_addr":"127.0.0.1","remote_port":49364,"status":200,"tid":"140300294606848","timestamp":1714696428}'),  # ollama/ollama#4112
    ("rayserve-app-ready", "INFO 2025-08-29 18:02:42,869 serve 519120 -- Application 'default' is ready at http://127.0.0.1:8000/."),  # ray-project/ray#55754
    # constructed from the format strings of TGI's launcher/src/main.rs and router/src/server.rs, of Triton's src/main.cc,
    # NIM's banner and Ray Serve's access and deployment records (no public log in the corpus quotes them):
    ("nim-banner", "== NVIDIA Inference Microservice LLM NIM =="),
    ("rayserve-request-ok", "(ProxyActor pid=2202) INFO 2025-08-29 18:02:50,100 proxy 10.0.0.1 3d79a85d-ac51 -- POST /v1/chat/completions 200 812.4ms"),
    ("rayserve-deploy-failed", "(ServeController pid=2203) ERROR 2025-08-29 18:02:50,100 controller 2203 -- Deploying app 'default' failed with exception:"),
    ("triton-server-failed", "error: creating server: Internal - failed to load all models"),
    ("tgi-download", "2024-04-29T11:11:11.331520Z  INFO download: text_generation_launcher: Starting check and download process for bigscience/bloom-560m"),
    ("tgi-webserver-starting", "2024-04-29T11:12:40.100000Z  INFO text_generation_launcher: Starting Webserver"),
    ("tgi-warmup", "2024-04-29T11:12:41.200000Z  INFO text_generation_router::server: router/src/server.rs:1700: Warming up model"),
]
# An entry may carry its own example (an engine file's entries do: a new engine is one data file).
EXAMPLES += [(r.id, r.example) for r in builtin_entries() if r.example]
# Entries matched only with their context (a traceback's frames), and the line that names them without it.
NEEDS_CONTEXT = {"sm120-symm-mem-keyerror": "python-exception", "vllm-symm-mem-sm120": "python-exception", "cuda-oom-kv-cache": "cuda-oom",
                 "cuda-oom-load": "cuda-oom", "weight-name-mismatch": "python-exception"}
# the frames an entry's context needs (default: SGLang's symmetric-memory tables at the KV cache's allocation)
CONTEXT_FRAMES = {"weight-name-mismatch": ('\n  File "/x/vllm/model_executor/models/qwen2.py", line 371, in load_weights'
                                          "\n    param = params_dict[name]"),  # vllm-project/llm-compressor#959
                  # vllm-project/llm-compressor#967
                  "cuda-oom-load": '\n  File "/x/vllm/model_executor/model_loader/loader.py", line 334, in load_model'}
EXAMPLE = dict(EXAMPLES)

ORDINARY = [
    '[2026-11-29 09:48:02] INFO:     127.0.0.1:51234 - "GET /get_model_info HTTP/1.1" 200 OK',  # SGLang's warm-up poll
    "INFO 03-26 05:25:01 cuda.py:230] Using Flash Attention backend.",  # gpustack/gpustack#1540
    "",
    "   ",
]


def test_every_builtin_line_entry_has_an_example() -> None:
    entries = [r.id for r in RuleSet().rules if r.scope == "line"]
    assert sorted(entries) == sorted(rid for rid, _ in EXAMPLES)


@pytest.mark.parametrize(("rule_id", "line"), EXAMPLES)
def test_example_names_its_rule(rule_id: str, line: str) -> None:
    rs = RuleSet()
    m = rs.match(line)
    death = rs.death_match(line)  # a death names its line before any other entry (events.EventBuilder)
    assert m is not None and (m.rule.id in (rule_id, NEEDS_CONTEXT.get(rule_id, rule_id))
                              or (death is not None and death.rule.id == rule_id))
    if death is not None and death.rule.id == rule_id and m.rule.id != rule_id:
        return  # a death is diagnosed by the most specific entry its text names (here another one)
    entry = RuleSet().by_id(rule_id)
    if entry is not None and entry.cause:
        frames = CONTEXT_FRAMES.get(rule_id, "\n  File \"/x/torch_symm_mem.py\", line 1, in init_memory_pool") \
            if rule_id in NEEDS_CONTEXT else ""
        c = RuleSet().classify(message_part(line), line + frames)
        assert c is not None and c.rule.id == rule_id, c


@pytest.mark.parametrize(("rule_id", "line"), EXAMPLES)
def test_byte_prefilter_admits_every_example(rule_id: str, line: str) -> None:
    filler = "\n".join(ORDINARY[:3]) + "\n"
    buf = (filler * 50 + line + "\n" + filler * 50).encode()
    # Tune on the filler so rare-byte anchors and whole-literal finds both get exercised.
    scanner = ByteScanner(RuleSet(), (filler * 200).encode())
    starts = scanner.candidate_starts(buf, len(buf))
    target = buf.index(line.encode())
    assert target in starts


@pytest.mark.parametrize("line", ORDINARY)
def test_ordinary_lines_match_nothing(line: str) -> None:
    assert RuleSet().match(line) is None


def test_progress_values() -> None:
    rs = RuleSet()
    m = rs.match(EXAMPLE["shards-progress"])
    assert m is not None and m.progress() == (50, 111)
    m = rs.match(EXAMPLE["cuda-graph-progress"])
    assert m is not None and m.progress() == (6, 23)
    m = rs.match(EXAMPLE["load-weight-begin"])
    assert m is not None and m.progress() is None


def test_specific_crash_beats_generic() -> None:
    m = RuleSet().match("RuntimeError: CUDA error: no kernel image is available for execution on the device")
    assert m is not None and m.rule.id == "no-kernel-image"
    m = RuleSet().match("RuntimeError: CUDA error: device-side assert triggered")
    assert m is not None and m.rule.id == "device-side-assert"
    m = RuleSet().match("RuntimeError: CUDA error: unspecified launch failure")
    assert m is not None and m.rule.id == "cuda-error"


def test_killed_needs_a_word_boundary() -> None:
    assert RuleSet().match("Killed") is not None
    assert RuleSet().match("UnKilledThing happened") is None


def test_ansi_is_stripped_for_matching() -> None:
    colored = "\x1b[31mKeyError: 12\x1b[0m"
    assert strip_ansi(colored) == "KeyError: 12"
    assert RuleSet().match(strip_ansi(colored)) is not None


def test_user_rules_come_first_and_are_matched() -> None:
    rs = RuleSet().with_user(ready=[r"my server is up \d+"], crash=["boom!"])
    m = rs.match("my server is up 42")
    assert m is not None and m.rule.kind is Kind.READY and m.rule.user
    m = rs.match("a boom! happened")
    assert m is not None and m.rule.kind is Kind.CRASH
    # built-ins still work
    assert rs.match(EXAMPLE["sglang-ready"]) is not None


def test_user_rule_without_a_literal_still_matches_in_both_paths() -> None:
    rs = RuleSet().with_user(ready=[r"^\d+\s+ok$"])
    assert rs.match("200 ok") is not None
    buf = b"foo\n200 ok\nbar\n"
    starts = ByteScanner(rs, buf).candidate_starts(buf, len(buf))
    assert 4 in starts


@pytest.mark.parametrize("pattern", ["a(", "[unclosed", "*start", "(?P<x>a)(?P<x>b)"])
def test_bad_user_regex_is_a_user_error_naming_it(pattern: str) -> None:
    with pytest.raises(UserError) as err:
        RuleSet().with_user(crash=[pattern])
    msg = str(err.value)
    assert repr(pattern) in msg and "crash pattern" in msg
    assert err.value.exit_code == 2


def test_empty_matching_user_regex_is_refused() -> None:
    with pytest.raises(UserError, match="matches every line"):
        RuleSet().with_user(ready=["x*"])


@pytest.mark.parametrize(
    ("pattern", "literal"),
    [("foo bar", "foo bar"), (r"ready\s+now", "ready"), (r"(abc|def)xyz", "xyz"), ("a.b", None),
     (r"(?:hello) world", "hello world"), (r"x(?i:abc)yz", None), (r"(ab|cd)", None)],
)
def test_required_literal(pattern: str, literal: str | None) -> None:
    assert required_literal(pattern) == literal


def test_case_insensitive_user_rule_is_not_anchored_on_a_literal() -> None:
    rs = RuleSet().with_user(ready=[r"(?i)server up"])
    assert rs.match("SERVER UP") is not None
    buf = b"x\nSERVER UP\n"
    assert 2 in ByteScanner(rs, buf).candidate_starts(buf, len(buf))


_fragments = st.sampled_from(
    [lit for r in RuleSet().rules for lit in r.literals] + ["Traceback", "Error", "\x1b[0m", "é", "\t", " ", "|", "12/34"]
)
_text = st.lists(st.one_of(_fragments, st.text(max_size=12)), max_size=8).map("".join)


@settings(max_examples=300, deadline=None)
@given(st.lists(_text, min_size=1, max_size=20))
def test_prefilter_never_drops_a_matching_line(lines: list[str]) -> None:
    """Soundness: every line that some rule matches is among the byte scanner's candidates."""
    rs = RuleSet()
    clean = [ln.replace("\n", " ").replace("\r", " ") for ln in lines]
    buf = ("\n".join(clean) + "\n").encode("utf-8", "surrogatepass")
    starts = set(ByteScanner(rs, buf).candidate_starts(buf, len(buf)))
    offset = 0
    for ln in clean:
        if rs.match(ln) is not None:
            assert offset in starts, ln
        offset += len(ln.encode("utf-8", "surrogatepass")) + 1


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=300))
def test_match_never_raises(text: str) -> None:
    rs = RuleSet()
    first = rs.match(text)
    every = rs.match_all(text)
    assert (first.rule.id if first else None) == (every[0].rule.id if every else None)
    assert all(m.match.re.search(message_part(text)) for m in every)
