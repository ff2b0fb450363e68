"""A seed ensemble trained as one (stacked parameters, vmapped steps) equals k separate runs of train_lm."""

import math

import pytest
import torch

from analysis.training.ensemble import Ensemble, train_ensemble
from analysis.models.lm import LanguageModel, ModelConfig
from analysis.training.train import TrainConfig, train_lm

CTX = 16


def _models(cfg: ModelConfig, k: int) -> list[LanguageModel]:
    out = []
    for seed in range(k):
        torch.manual_seed(seed)
        out.append(LanguageModel(cfg))
    return out


@pytest.mark.parametrize("cfg", [
    ModelConfig(d=32, layers=2, block="transformer", residual="pre", norm="rmsnorm", ffn="swiglu", heads=2, ctx=CTX),
    ModelConfig(d=32, layers=2, block="gau", residual="post", s=16, ctx=CTX, gau_backend="dense"),
])
def test_an_ensemble_of_k_seeds_equals_k_separate_train_lm_runs(cfg):
    k, steps, batch = 3, 4, 4
    gen = torch.Generator().manual_seed(0)
    batches = [(torch.randint(0, 256, (k, batch, CTX), generator=gen), torch.randint(0, 256, (k, batch, CTX),
                                                                                     generator=gen))
               for _ in range(steps)]
    train = TrainConfig(steps=steps, batch=batch, lr=3e-3, warmup=1, grad_clip=0.5, seed=0)
    separate, curves = _models(cfg, k), []
    for i, model in enumerate(separate):
        feed = iter([(x[i], y[i]) for x, y in batches])
        log = train_lm(model, lambda size, g: next(feed), train, CTX, torch.device("cpu"), progress=False,
                       log_every=1, explode_factor=math.inf)
        curves.append(log.train_loss)
    together = _models(cfg, k)
    ens_curves = train_ensemble(together, batches, train)
    for a, b in zip(curves, ens_curves):
        assert b == pytest.approx(a, rel=1e-5)
    for a, b in zip(separate, together):
        for (name, p), (_, q) in zip(a.named_parameters(), b.named_parameters()):
            torch.testing.assert_close(q, p, rtol=1e-4, atol=1e-5, msg=name)


def test_ensembles_refuse_what_they_cannot_stack():
    lean = ModelConfig(d=32, layers=1, block="gau", s=16, ctx=CTX, gau_backend="lean")
    ens = Ensemble(_models(lean, 2), TrainConfig(steps=1, batch=2))
    x = torch.zeros(2, 2, CTX, dtype=torch.long)
    with pytest.raises(ValueError, match="cannot be vmapped"):
        ens.losses(x, x)
    with pytest.raises(ValueError, match="shape"):
        ens.losses(x[:1], x[:1])
    with pytest.raises(ValueError, match="one architecture"):
        Ensemble([LanguageModel(lean), LanguageModel(ModelConfig(d=32, layers=2, block="gau", s=16, ctx=CTX))],
                 TrainConfig(steps=1, batch=2))
    with pytest.raises(ValueError, match="at least one"):
        Ensemble([], TrainConfig(steps=1, batch=2))
    with pytest.raises(ValueError, match="at least cfg.steps"):
        train_ensemble(_models(lean, 1), [], TrainConfig(steps=1, batch=2))
