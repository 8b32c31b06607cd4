"""The harness's Llama-style decoder (trainscale.bench.model)."""

from __future__ import annotations

import dataclasses

import pytest

from trainscale.sim.model.params import TransformerShape, total_params

pytestmark = pytest.mark.bench


@pytest.fixture(scope="module")
def model_module(torch_module):
    from trainscale.bench import model

    return model


SHAPE = TransformerShape(layers=2, hidden=64, heads=8, kv_heads=2, ffn=96, vocab=100, swiglu=True)
ARGS = dict(shape=SHAPE, seq_len=32)


def test_parameter_count_matches_the_catalogue_formula(model_module):
    model = model_module.LlamaDecoder(model_module.ModelShapeArgs(**ARGS))
    expected = total_params(SHAPE, False)  # SwiGLU, untied
    assert sum(p.numel() for p in model.parameters()) == int(expected)
    assert model.layers[0].attention.wk.weight.shape == (2 * 8, 64)  # kv_heads × head_dim


def test_attention_is_causal(model_module, torch_module):
    torch = torch_module
    model = model_module.LlamaDecoder(model_module.ModelShapeArgs(**ARGS))
    model.init_weights(torch.Generator().manual_seed(0))
    tokens = torch.randint(100, (2, 16), generator=torch.Generator().manual_seed(1))
    changed = tokens.clone()
    changed[:, 10:] = (changed[:, 10:] + 1) % 100
    with torch.no_grad():
        a, b = model(tokens), model(changed)
    assert a.shape == (2, 16, 100)
    assert torch.allclose(a[:, :10], b[:, :10], atol=1e-6)  # the past cannot see the future
    assert not torch.allclose(a[:, 10:], b[:, 10:])


def test_same_seed_same_weights(model_module, torch_module):
    torch = torch_module
    shape = model_module.ModelShapeArgs(**ARGS)
    first, second = model_module.LlamaDecoder(shape), model_module.LlamaDecoder(shape)
    first.init_weights(torch.Generator().manual_seed(3))
    second.init_weights(torch.Generator().manual_seed(3))
    for p, q in zip(first.parameters(), second.parameters(), strict=True):
        assert torch.equal(p, q)


def test_rejects_an_odd_head_width(model_module):
    with pytest.raises(ValueError, match="head width hidden/heads must be even"):
        shape = dataclasses.replace(SHAPE, hidden=72, heads=8)
        model_module.LlamaDecoder(model_module.ModelShapeArgs(shape=shape, seq_len=32))


def test_catalogue_gpu_keys(torch_module):
    from trainscale.bench.device import catalogue_gpu_key
    from trainscale.sim.system.hardware import load_hardware

    hardware = load_hardware()
    assert catalogue_gpu_key("NVIDIA H200", 139.8, hardware) == "h200-sxm-141gb"
    assert catalogue_gpu_key("NVIDIA H100 80GB HBM3", 79.1, hardware) == "h100-sxm-80gb"
    assert catalogue_gpu_key("NVIDIA A100-SXM4-40GB", 39.4, hardware) == "a100-sxm-40gb"
    assert catalogue_gpu_key("NVIDIA A100-SXM4-80GB", 79.2, hardware) == "a100-sxm-80gb"
    assert catalogue_gpu_key("NVIDIA B200", 179.1, hardware) == "b200"
    assert catalogue_gpu_key("Tesla V100-SXM2-32GB", 31.7, hardware) == "v100-sxm-32gb"
    assert catalogue_gpu_key("NVIDIA GeForce RTX 4090", 24.0, hardware) is None


def test_clip_grad_norm_matches_torch(torch_module):
    torch = torch_module
    from trainscale.bench.parallel import clip_grad_norm

    params = [torch.nn.Parameter(torch.ones(3)), torch.nn.Parameter(torch.ones(4))]
    copies = [torch.nn.Parameter(torch.ones(3)), torch.nn.Parameter(torch.ones(4))]
    for p, q, g in zip(
        params, copies, (torch.full((3,), 2.0), torch.full((4,), -1.0)), strict=True
    ):
        p.grad, q.grad = g.clone(), g.clone()
    norm = clip_grad_norm(params, 1.0)
    expected = torch.nn.utils.clip_grad_norm_(copies, 1.0)
    assert norm == pytest.approx(float(expected)) == pytest.approx(4.0)
    for p, q in zip(params, copies, strict=True):
        assert torch.allclose(p.grad, q.grad)
