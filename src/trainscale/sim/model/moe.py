"""The mixture-of-experts MLP: its shape and its parameters, total and active per token.

A mixture-of-experts block replaces the MLP by ``num_experts`` routed experts (each a SwiGLU MLP
of inner width ``expert_ffn``), of which a router picks ``experts_per_token`` (top-k) per token,
plus ``shared_experts`` experts every token goes through (inner width ``shared_expert_ffn``). The
router is one ``hidden x num_experts`` matrix (Switch Transformer, arXiv 2101.03961; Mixtral,
arXiv 2401.04088; DeepSeekMoE, arXiv 2401.06066). The first ``dense_layers`` blocks keep a dense
MLP of the model's ``ffn`` (DeepSeek-V3: ``first_k_dense_replace`` = 3 of 61 layers).

Per token, the routed experts' weights that take part are ``experts_per_token`` of
``num_experts``; shared experts and the router always. Biases (GPT-OSS's, Qwen2's shared-expert
gate) are ignored, as for dense models.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["MoEShape", "moe_mlp_active_params", "moe_mlp_params", "router_params"]


@dataclass(frozen=True, slots=True, kw_only=True)
class MoEShape:
    """A model's mixture-of-experts MLP (see module docstring)."""

    num_experts: int
    """Routed experts per MoE block."""
    experts_per_token: int
    """Routed experts each token is sent to (top-k)."""
    expert_ffn: int
    """Inner width of one routed expert (SwiGLU: three ``hidden x expert_ffn`` matrices)."""
    shared_experts: int
    """Experts every token goes through (0: none)."""
    shared_expert_ffn: int
    """Inner width of one shared expert (Qwen2-57B-A14B: one of 20480; DeepSeek: = expert_ffn)."""
    dense_layers: int
    """Leading blocks with a dense MLP of the model's ``ffn`` instead of experts."""

    def moe_layers(self, layers: int) -> int:
        """Blocks whose MLP is a mixture of experts."""
        return layers - self.dense_layers


def router_params(hidden: int, moe: MoEShape) -> int:
    """Weights of one block's router (``hidden x num_experts``)."""
    return hidden * moe.num_experts


def moe_mlp_params(hidden: int, moe: MoEShape) -> int:
    """Weights of one MoE block's MLP: every routed expert, the shared experts and the router."""
    routed = moe.num_experts * 3 * hidden * moe.expert_ffn
    shared = moe.shared_experts * 3 * hidden * moe.shared_expert_ffn
    return routed + shared + router_params(hidden, moe)


def moe_mlp_active_params(hidden: int, moe: MoEShape) -> int:
    """Weights of one MoE block's MLP that one token passes through: its ``experts_per_token``
    routed experts, the shared experts and the router."""
    routed = moe.experts_per_token * 3 * hidden * moe.expert_ffn
    shared = moe.shared_experts * 3 * hidden * moe.shared_expert_ffn
    return routed + shared + router_params(hidden, moe)
