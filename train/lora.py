"""LoRA on a Qwen3 (qwen3.py): wrap linear layers, merge, and write the PEFT format.

PEFT's layout: adapter_config.json (peft_type LORA, r, lora_alpha, use_rslora, target_modules, ...)
and adapter_model.safetensors with base_model.model.<module>.lora_A.weight [r, in] and
.lora_B.weight [out, r]; the merged weight is W + (alpha / r) * B @ A.
"""

import json
import math
import os

import torch
import torch.nn as nn

import qwen3

TARGETS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")


class LoRALinear(nn.Module):
    """base(x) + scale * B(A(x)); the base stays frozen, B starts at zero (PEFT's init)."""

    def __init__(self, base, r, alpha, gen):
        super().__init__()
        self.base = base
        self.scale = alpha / r
        self.lora_A = nn.Parameter(torch.empty(r, base.in_features))
        self.lora_B = nn.Parameter(torch.zeros(base.out_features, r))
        bound = 1.0 / math.sqrt(base.in_features)  # kaiming-uniform(a=sqrt 5), as PEFT
        with torch.no_grad():
            self.lora_A.copy_(torch.rand(self.lora_A.shape, generator=gen) * 2 * bound - bound)

    def forward(self, x):
        return self.base(x) + (x @ self.lora_A.t() @ self.lora_B.t()) * self.scale


def wrapped(model):
    """[(module name, LoRALinear)] in model order."""
    return [(n, m) for n, m in model.named_modules() if isinstance(m, LoRALinear)]


def add_lora(model, r, alpha, gen, targets=TARGETS):
    """Freeze model and wrap every target linear layer of its trunk; returns the LoRA parameters."""
    for p in model.parameters():
        p.requires_grad_(False)
    for name, mod in list(model.named_modules()):
        for child, sub in list(mod.named_children()):
            if child in targets and isinstance(sub, nn.Linear):
                setattr(mod, child, LoRALinear(sub, r, alpha, gen))
    model.lora_config = {"r": r, "lora_alpha": alpha, "target_modules": list(targets)}
    return trainable(model)


def trainable(model):
    """The LoRA parameters model wraps, trainable: add_lora's new ones, or load_peft's, so that an
    adapter is trained on from where it stands rather than from zero."""
    params = [p for _, m in wrapped(model) for p in (m.lora_A, m.lora_B)]
    for p in params:
        p.requires_grad_(True)
    return params


def merged_copy(model):
    """A plain Qwen3 with every adapter delta added to its base weight."""
    out = qwen3.Qwen3(model.config)
    sd = {}
    for k, v in model.state_dict().items():
        if ".lora_" in k:
            continue
        sd[k.replace(".base.weight", ".weight")] = v.clone()
    for name, m in wrapped(model):
        sd[name + ".weight"] += m.scale * (m.lora_B @ m.lora_A).detach()
    out.load_state_dict(sd)
    return out


def save_peft(model, path, base_name):
    """Write adapter_config.json and adapter_model.safetensors (PEFT names, F32)."""
    save_soup([model], path, base_name)


def write_peft_config(c, path, base_name):
    """adapter_config.json of a plain LoRA: c holds r, lora_alpha and target_modules."""
    cfg = {"peft_type": "LORA", "task_type": "CAUSAL_LM", "r": c["r"], "lora_alpha": c["lora_alpha"],
           "lora_dropout": 0.0, "use_rslora": False, "use_dora": False, "bias": "none",
           "fan_in_fan_out": False, "init_lora_weights": True, "inference_mode": True,
           "modules_to_save": None, "rank_pattern": {}, "alpha_pattern": {},
           "target_modules": c["target_modules"], "base_model_name_or_path": base_name}
    with open(os.path.join(path, "adapter_config.json"), "w") as f:
        json.dump(cfg, f, indent=2)


def save_soup(models, path, base_name):
    """One PEFT adapter whose delta is the mean of the models' adapter deltas (same r, alpha, targets):
    their A matrices stacked and their B matrices side by side at 1/N, rank N x r, alpha N x alpha
    (the same scale alpha / r), so sum_k s B_k A_k / N is exact."""
    n, c = len(models), models[0].lora_config
    os.makedirs(path, exist_ok=True)
    write_peft_config(dict(c, r=n * c["r"], lora_alpha=n * c["lora_alpha"]), path, base_name)
    tensors = {}
    for parts in zip(*[wrapped(m) for m in models]):
        name = parts[0][0]
        tensors[f"base_model.model.{name}.lora_A.weight"] = torch.cat([m.lora_A.detach() for _, m in parts]).numpy()
        tensors[f"base_model.model.{name}.lora_B.weight"] = torch.cat([m.lora_B.detach() / n for _, m in parts],
                                                                      1).numpy()
    qwen3.write_safetensors(os.path.join(path, "adapter_model.safetensors"), tensors, {"format": "pt"})


def load_peft(model, path):
    """Wrap model's target layers with the adapter in a PEFT directory (unmerged)."""
    with open(os.path.join(path, "adapter_config.json")) as f:
        cfg = json.load(f)
    if cfg.get("peft_type") != "LORA" or cfg.get("use_dora") or cfg.get("use_rslora"):
        raise ValueError(f"{path}: only plain LoRA adapters are supported here")
    tensors = qwen3.read_safetensors(os.path.join(path, "adapter_model.safetensors"))
    add_lora(model, cfg["r"], cfg["lora_alpha"], torch.Generator(), tuple(cfg["target_modules"]))
    for name, m in wrapped(model):
        with torch.no_grad():
            for part in ("lora_A", "lora_B"):
                key = f"base_model.model.{name}.{part}.weight"
                if key not in tensors:
                    raise ValueError(f"{path}: adapter_model.safetensors lacks {key}")
                getattr(m, part).copy_(torch.from_numpy(tensors[key].copy()))
    return model
