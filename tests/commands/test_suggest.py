"""A near-miss name gets a "did you mean" naming the catalogue key (user trial 3, item 20)."""

from __future__ import annotations

import pytest

from trainscale.cli import main
from trainscale.io.suggest import closest, did_you_mean

MODELS = ("llama2-7b", "llama2-13b", "llama2-70b", "llama3-8b", "gpt3-175b")
GPUS = ("a100-sxm-80gb", "h100-sxm-80gb", "h200-sxm-141gb", "v100-sxm-32gb")


@pytest.mark.parametrize(
    ("name", "choices", "expected"),
    [
        ("llama2-7B", MODELS, "llama2-7b"),  # case
        ("lama2-7b", MODELS, "llama2-7b"),  # a letter missing
        ("llama-70b", MODELS, "llama2-70b"),
        ("h200", GPUS, "h200-sxm-141gb"),  # the beginning of one key only
        ("a100-80gb", GPUS, "a100-sxm-80gb"),
        ("megatorn", ("megatron", "deepspeed", "pytorch"), "megatron"),
        ("xyz", GPUS, None),
        ("", GPUS, None),
    ],
)
def test_the_closest_key_or_none(name, choices, expected):
    assert closest(name, choices) == expected


def test_no_hint_when_nothing_is_close():
    assert did_you_mean("xyz", GPUS) == ""
    assert did_you_mean("h100", GPUS) == " (did you mean 'h100-sxm-80gb'?)"


@pytest.mark.parametrize(
    ("option", "value", "hint"),
    [
        ("--model", "llama2-7B", "unknown model 'llama2-7B' (did you mean 'llama2-7b'?)"),
        ("--gpu", "h100", "unknown GPU 'h100' (did you mean 'h100-sxm-80gb'?)"),
        ("--system", "fernandez-h10", "(did you mean 'fernandez-h100'?)"),
    ],
)
def test_predict_names_the_key_it_meant(option, value, hint, capsys):
    args = {"--model": "llama2-7b", "--gpu": "h100-sxm-80gb", "--num-gpus": "8"} | {option: value}
    assert main(["predict", *[x for pair in args.items() for x in pair]]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert hint in err
    assert "valid:" in err  # the full list stays


def test_a_misspelt_framework_in_a_table_is_named(tmp_path, capsys):
    path = tmp_path / "in.csv"
    path.write_text(
        "model,gpu,num_gpus,seq_len,global_batch,micro_batch,tp,pp,sharding,recompute,"
        "precision,framework\nllama2-7b,h100-sxm-80gb,8,4096,8,1,1,1,fsdp,none,bf16,megatorn\n"
    )
    assert main(["predict", str(path), "-o", str(tmp_path / "out.csv")]) == 2
    err = capsys.readouterr().err
    assert "unknown framework 'megatorn' (did you mean 'megatron'?)" in err
    assert not (tmp_path / "out.csv").exists()


@pytest.mark.parametrize(
    ("option", "value", "meant"),
    [("--gpu", "H100", "h100-sxm-80gb"), ("--model", "llama-2-7b", "llama2-7b")],
)
def test_the_trial_spellings_get_their_key(option, value, meant, capsys):
    """User trial 3, item 17: ``H100`` (a catalogue alias) and ``llama-2-7b``."""
    args = {"--model": "llama2-7b", "--gpu": "h100-sxm-80gb", "--num-gpus": "8"} | {option: value}
    assert main(["predict", *[x for pair in args.items() for x in pair]]) == 2
    assert f"(did you mean {meant!r}?)" in capsys.readouterr().err


def test_choice_values_are_written_back_as_the_choice(tmp_path):
    """``FSDP``, ``Selective``, ``BF16``, ``Megatron`` and ``SwiGLU`` are read and written back
    as ``fsdp``, ``selective``, ``bf16``, ``megatron`` and ``swiglu`` (item 17)."""
    import pandas as pd

    path = tmp_path / "in.csv"
    path.write_text(
        "model,gpu,num_gpus,seq_len,global_batch,micro_batch,tp,pp,sharding,recompute,"
        "precision,framework,mlp,label\n"
        "llama2-7b,h100-sxm-80gb,8,4096,8,1,1,1,FSDP,Selective,BF16,Megatron,SwiGLU,Mine\n"
    )
    out = tmp_path / "out.csv"
    assert main(["predict", str(path), "-o", str(out)]) == 0
    row = pd.read_csv(out).iloc[0]
    assert (row["sharding"], row["recompute"], row["precision"]) == ("fsdp", "selective", "bf16")
    assert (row["framework"], row["mlp"]) == ("megatron", "swiglu")
    assert row["label"] == "Mine"  # a column of the user's own is carried through as given


def test_predict_help_lists_the_table_columns(capsys):
    with pytest.raises(SystemExit):
        main(["predict", "--help"])
    out = capsys.readouterr().out
    assert "Table columns (CONFIGS):" in out
    for name in ("seq_len", "global_batch", "num_gpus", "layers", "power_limit_w", "framework"):
        assert name in out
