"""ModelSpec arithmetic against a hand computation, and strict loading of suite files."""

from __future__ import annotations

from pathlib import Path

import pytest

from runners import spec

SEED_MODEL = dict(
    name="seed",
    family="gpt",
    vocab=32000,
    dim=4096,
    layers=5,
    heads=32,
    kv_heads=32,
    ffn_dim=16384,
    context=1024,
    norm="layernorm",
    activation="gelu",
    tied_embeddings=False,
)


def test_seed_model_parameters_match_hand_computation() -> None:
    m = spec.ModelSpec(**SEED_MODEL)
    d, v, layers, t = 4096, 32000, 5, 1024
    # one block: fused qkv 3d² + proj d² + MLP 2·d·4d + two norm weights 2d (no biases)
    block = 3 * d * d + d * d + 2 * d * (4 * d) + 2 * d
    assert block == 201_334_784
    non_embedding = layers * block + d + v * d  # blocks, final norm, untied LM head
    assert m.non_embedding_params == non_embedding == 1_137_750_016
    assert m.embedding_params == v * d + t * d == 135_266_304
    assert m.total_params == 1_273_016_320  # the seed's "1.2B" (DESIGN.md: ≈1.27B)
    # PaLM appendix B: 6N + 12·L·d·T
    assert m.flops_per_token(1024) == 6 * 1_137_750_016 + 12 * 5 * 4096 * 1024 == 7_078_158_336


def test_llama_8b_shape_counts_gqa() -> None:
    m = spec.ModelSpec(
        name="llama-8b",
        family="llama",
        vocab=128256,
        dim=4096,
        layers=32,
        heads=32,
        kv_heads=8,
        ffn_dim=14336,
        context=8192,
        norm="rmsnorm",
        activation="swiglu",
        tied_embeddings=False,
    )
    assert m.total_params == 8_030_261_248  # Llama 3.1 8B's published parameter count


def test_shipped_suites_load() -> None:
    smoke = spec.load_suite("cpu-smoke")
    seed = spec.load_suite("h100")
    assert smoke.workloads[0].world_size == 2 and smoke.workloads[0].dist_backend == "gloo"
    w = seed.workloads[0]
    assert (w.seq_len, w.micro_batch, w.world_size, w.steps) == (1024, 4, 2, 2000)
    assert seed.models[w.model].total_params == 1_273_016_320
    assert seed.variants["ddp-fp32-stock"].tier == "stock"


def test_a_suite_may_carry_a_title_for_the_site_and_keeps_its_name(tmp_path: Path) -> None:
    """The suite named "h100" holds H200 runs: its file gives the site a title; its name (records, `nox -s
    bench-h100`, result paths) is unchanged. A suite without one has an empty title; a title must be text."""
    seed = spec.load_suite("h100")
    assert seed.name == "h100" and seed.title == "H200 bench"
    assert spec.load_suite("cpu-smoke").title == ""
    path = tmp_path / "mine.toml"
    text = spec.SUITES_DIR.joinpath("cpu-smoke.toml").read_text()
    path.write_text(text.replace('name = "cpu-smoke"\n', 'name = "cpu-smoke"\ntitle = 3\n'))
    with pytest.raises(spec.SpecError, match=r"mine\.toml: \[suite\] key 'title'"):
        spec.load_suite(path)


def test_unknown_key_names_file_and_key(tmp_path: Path) -> None:
    path = tmp_path / "mine.toml"
    path.write_text(
        spec.SUITES_DIR.joinpath("cpu-smoke.toml").read_text().replace("seq_len = 64", "seq_len = 64\nseqlen = 3")
    )
    with pytest.raises(spec.SpecError, match=r"mine\.toml.*unknown key 'seqlen'"):
        spec.load_suite(path)


def test_wrong_type_names_file_and_key(tmp_path: Path) -> None:
    path = tmp_path / "mine.toml"
    path.write_text(spec.SUITES_DIR.joinpath("cpu-smoke.toml").read_text().replace("dim = 64", 'dim = "64"'))
    with pytest.raises(spec.SpecError, match=r"mine\.toml: \[models\.gpt-tiny\]: key 'dim': expected an integer"):
        spec.load_suite(path)


def test_missing_key_and_unknown_variant(tmp_path: Path) -> None:
    path = tmp_path / "mine.toml"
    text = spec.SUITES_DIR.joinpath("cpu-smoke.toml").read_text()
    path.write_text(text.replace("micro_batch = 4\n", ""))
    with pytest.raises(spec.SpecError, match=r"missing key 'micro_batch'"):
        spec.load_suite(path)
    path.write_text(text.replace('"ddp-fp32-stock"', '"ddp-turbo"'))
    with pytest.raises(spec.SpecError, match=r"'ddp-turbo' is not in .*variants\.toml"):
        spec.load_suite(path)


def test_invalid_shapes_are_rejected() -> None:
    with pytest.raises(spec.SpecError, match="not divisible by heads"):
        spec.ModelSpec(**(SEED_MODEL | {"heads": 30}))


def test_variant_settings_are_written_out_in_full() -> None:
    from runners.engines.torch import setup as torch_setup

    for variant in spec.load_variants().values():
        if variant.engine == "torch":
            torch_setup.check_settings(variant)  # raises on a missing or unknown setting
    bad = spec.Variant(name="x", engine="torch", tier="stock", description="", settings={"parallel": "ddp", "lr": 1e-3})
    with pytest.raises(spec.SpecError, match="missing key 'betas': write every setting out"):
        torch_setup.check_settings(bad)
    stock = spec.load_variants()["ddp-fp32-stock"]
    with pytest.raises(spec.SpecError, match="unknown key 'reshard_after_forward'"):
        torch_setup.check_settings(stock, {"reshard_after_forward": False})  # an FSDP2 setting on DDP
    with pytest.raises(spec.SpecError, match="key 'precision': 'fp8' is not one of"):
        torch_setup.check_settings(stock, {"precision": "fp8"})
    # the stock variants are PyTorch's defaults, written out
    assert torch_setup.check_settings(stock) == torch_setup.defaults_for("ddp")
