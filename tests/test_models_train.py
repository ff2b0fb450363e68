import dataclasses
import math

import numpy as np
import pytest
import torch

from analysis.models.lm import LanguageModel, ModelConfig
from analysis.training.train import TrainConfig, token_stats, train_lm
from analysis.tasks.data import fixed_windows, random_windows

CFG = ModelConfig.gpt(d=32, layers=2, heads=4, ctx=16)


def test_shapes_and_parameter_count():
    model = LanguageModel(CFG)
    idx = torch.randint(0, 256, (3, 16))
    assert model(idx).shape == (3, 16, 256)
    # tied embedding counted once: 256*32 + 16*32 + per block (attention, FFN, two LayerNorms) + final LayerNorm
    block = (3 * 32 * 32 + 3 * 32) + (32 * 32 + 32) + (32 * 128 + 128) + (128 * 32 + 32) + 4 * 32
    assert model.num_parameters() == 256 * 32 + 16 * 32 + 2 * block + 2 * 32


def test_causality_future_tokens_never_change_earlier_outputs():
    torch.manual_seed(0)
    model = LanguageModel(CFG).eval()
    a = torch.randint(0, 256, (2, 16))
    b = a.clone()
    b[:, 9:] = torch.randint(0, 256, (2, 7))
    with torch.no_grad():
        la, lb = model(a), model(b)
    torch.testing.assert_close(la[:, :9], lb[:, :9])
    assert not torch.allclose(la[:, 9:], lb[:, 9:])


def test_config_and_input_validation():
    with pytest.raises(ValueError, match="divisible by heads"):
        ModelConfig.gpt(d=30, layers=1, heads=4, ctx=16)
    with pytest.raises(ValueError, match="ctx must be a positive integer"):
        ModelConfig.gpt(d=32, layers=1, heads=4, ctx=0)
    with pytest.raises(ValueError, match="even head width"):
        ModelConfig(block="transformer", d=36, heads=4)
    with pytest.raises(ValueError, match="Transformer blocks only"):
        ModelConfig(block="gau", attn="cosine")
    for bad in (0.0, float("nan"), -1.0):
        with pytest.raises(ValueError, match="attn_alpha"):
            ModelConfig.gpt(d=32, layers=1, heads=4, ctx=16, attn_alpha=bad)
    model = LanguageModel(CFG)
    with pytest.raises(ValueError, match="exceeds ctx"):
        model(torch.zeros(1, 17, dtype=torch.long))
    with pytest.raises(ValueError, match="shape \\(batch, length\\)"):
        model(torch.zeros(17, dtype=torch.long))


def test_schedule_and_train_config_validation():
    cfg = TrainConfig(steps=100, batch=2, lr=1.0, warmup=10)
    assert cfg.lr_at(0) == pytest.approx(0.1) and cfg.lr_at(9) == pytest.approx(1.0)
    assert cfg.lr_at(10) == pytest.approx(1.0) and cfg.lr_at(100) == pytest.approx(0.1)
    for kw, message in [({"steps": 0}, "steps"), ({"batch": 0}, "batch"), ({"lr": -1.0}, "lr"),
                        ({"warmup": 200}, "warmup"), ({"grad_clip": 0.0}, "grad_clip")]:
        with pytest.raises(ValueError, match=message):
            TrainConfig(**{"steps": 100, "batch": 2, **kw})


def test_windows_are_shifted_targets():
    tokens = np.arange(200, dtype=np.uint8)
    x, y = random_windows(tokens, 10, 4, torch.Generator().manual_seed(0))
    assert x.shape == y.shape == (4, 10)
    torch.testing.assert_close(y[:, :-1], x[:, 1:])
    fx, fy, idx = fixed_windows(tokens, 10, 5)
    torch.testing.assert_close(fy, torch.from_numpy(tokens.astype(np.int64))[idx])
    with pytest.raises(ValueError, match="need more than"):
        random_windows(tokens[:5], 10, 1, torch.Generator())


def test_training_learns_a_repeating_pattern_and_stats_are_consistent():
    tokens = np.frombuffer(b"abcdefgh" * 400, dtype=np.uint8).copy()
    torch.manual_seed(0)
    model = LanguageModel(CFG)
    seen = []
    log = train_lm(model, tokens, TrainConfig(steps=60, batch=8, lr=3e-3, warmup=5), 16, torch.device("cpu"),
                   on_step=lambda step, m: seen.append(step), progress=False)
    assert seen == list(range(61)) and log.diverged_at is None
    assert log.train_loss[-1] < 0.5 * log.train_loss[0]
    stats = token_stats(model, tokens, 16, 8, torch.device("cpu"))
    np.testing.assert_allclose(stats.loss, -np.log(stats.p_correct), rtol=1e-12)
    assert np.all(stats.entropy >= 0) and np.all(stats.entropy <= math.log(256) + 1e-9)


def test_divergence_is_recorded_not_raised():
    model = LanguageModel(CFG)
    with torch.no_grad():
        model.embed.weight.fill_(float("nan"))
    tokens = np.arange(200, dtype=np.uint8)
    log = train_lm(model, tokens, TrainConfig(steps=5, batch=2), 16, torch.device("cpu"), progress=False)
    assert log.diverged_at == 0


def test_attention_variants_agree_with_explicit_softmax_and_learn_the_scale():
    torch.manual_seed(0)
    idx = torch.randint(0, 256, (2, 16))
    for kw in ({"attn_alpha": 2.5}, {"attn": "cosine", "cosine_scale": 20.0},
               {"attn_alpha": 2.5, "positions": "rope"}):
        model = LanguageModel(ModelConfig.gpt(d=32, layers=1, heads=4, ctx=16, **kw)).eval()
        fast = model(idx)
        attn = model.attention_layers()[0]
        attn.track_softmax_gradient = True
        slow = model(idx)
        torch.testing.assert_close(fast, slow, rtol=1e-5, atol=1e-5)
        # alpha (1 - sum p^2) lies in [0, alpha]; the first row (one key) contributes 0
        theory_scale = kw.get("attn_alpha", kw.get("cosine_scale"))
        assert 0 < attn.softmax_gradient < theory_scale
    model = LanguageModel(ModelConfig.gpt(d=32, layers=1, heads=4, ctx=16, attn="cosine", learn_cosine_scale=True))
    model(idx).sum().backward()
    assert model.attention_layers()[0].log_cosine_scale.grad is not None
    with pytest.raises(ValueError, match="attn must be one of"):
        ModelConfig.gpt(d=32, layers=1, heads=4, ctx=16, attn="linear")


def test_checkpoint_resume_reproduces_an_uninterrupted_run(tmp_path):
    tokens = np.frombuffer(b"the quick brown fox jumps over the lazy dog. " * 60, dtype=np.uint8).copy()
    cfg = TrainConfig(steps=12, batch=4, lr=3e-3, warmup=2)

    def fresh():
        torch.manual_seed(0)
        return LanguageModel(CFG)

    straight = fresh()
    log_a = train_lm(straight, tokens, cfg, 16, torch.device("cpu"), progress=False, log_every=1)

    class Stop(Exception):
        pass

    def interrupt(step, model):
        if step == 6:
            raise Stop

    path = tmp_path / "run.ckpt"
    with pytest.raises(Stop):
        train_lm(fresh(), tokens, cfg, 16, torch.device("cpu"), on_step=interrupt, progress=False, log_every=1,
                 checkpoint=path, checkpoint_every=4)
    assert path.exists() and not (tmp_path / "run.ckpt.tmp").exists()
    resumed = fresh()
    log_b = train_lm(resumed, tokens, cfg, 16, torch.device("cpu"), progress=False, log_every=1,
                     checkpoint=path, checkpoint_every=4)
    assert log_b.resumed_from == 4
    assert log_b.train_loss == pytest.approx(log_a.train_loss, rel=1e-6)
    for p, q in zip(straight.parameters(), resumed.parameters()):
        torch.testing.assert_close(p, q)


def test_validation_is_logged_and_loss_explosion_is_divergence():
    tokens = np.frombuffer(b"abcdefgh" * 300, dtype=np.uint8).copy()
    torch.manual_seed(0)
    log = train_lm(LanguageModel(CFG), tokens, TrainConfig(steps=10, batch=4), 16, torch.device("cpu"),
                   progress=False, val_tokens=tokens, eval_every=5, eval_windows=4)
    assert log.val_steps == [5, 10] and all(np.isfinite(log.val_loss))
    torch.manual_seed(0)
    blown = train_lm(LanguageModel(CFG), tokens, TrainConfig(steps=30, batch=4, lr=5.0, grad_clip=None),
                     16, torch.device("cpu"), progress=False, explode_factor=1.5)
    assert blown.diverged_at is not None and blown.diverged_at < 30


def test_grad_norms_are_the_total_norm_before_clipping_per_step():
    from analysis.training.train import GradNorms

    torch.manual_seed(0)
    model = LanguageModel(ModelConfig(vocab=64, d=32, layers=2, ctx=16, heads=4, s=16))
    meter = GradNorms(model)
    expected = []
    for _ in range(2):
        model.zero_grad(set_to_none=True)
        x = torch.randint(0, 64, (2, 16))
        (100 * model(x).logsumexp(-1).mean()).backward()  # large enough that a clip at 1 changes the gradients
        expected.append(float(torch.nn.utils.get_total_norm([p.grad for p in model.parameters()])))
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        meter.step()
    assert expected[0] > 1.0
    assert meter.norms == pytest.approx(expected, rel=1e-6)
    meter.step()  # no backward pass since the last step: no norm
    assert math.isnan(meter.norms[-1])
    meter.close()
    model(torch.randint(0, 64, (2, 16))).sum().backward()
    meter.step()
    assert math.isnan(meter.norms[-1])  # the hooks are gone
    frozen = torch.nn.Linear(2, 2).requires_grad_(False)
    with pytest.raises(ValueError, match="no parameter that requires a gradient"):
        GradNorms(frozen)


def _run(check_every: int | None = None, lr: float = 3e-3, **kw):
    tokens = np.frombuffer(b"abcdefgh" * 300, dtype=np.uint8).copy()
    torch.manual_seed(0)
    model = LanguageModel(CFG)
    log = train_lm(model, tokens, TrainConfig(steps=23, batch=4, lr=lr, grad_clip=None), 16, torch.device("cpu"),
                   progress=False, log_every=3, explode_factor=1.5, check_every=check_every, **kw)
    return model, log


def test_reading_losses_back_in_windows_logs_the_same_run():
    """check_every > 1 (the CUDA default, 16) reads losses back once per window: the same log and parameters, and a
    divergence is dated at the same first bad step (later steps of its window have run)."""
    every, every1 = _run(1), _run(check_every=5)
    assert every[1] == every1[1] and every[1].diverged_at is None
    for p, q in zip(every[0].parameters(), every1[0].parameters()):
        assert torch.equal(p, q)
    blown, blown5 = _run(1, lr=5.0), _run(5, lr=5.0)
    assert blown[1].diverged_at is not None and blown5[1].diverged_at == blown[1].diverged_at
    assert blown5[1].train_loss == blown[1].train_loss


def test_a_failing_compiler_falls_back_to_eager_training(monkeypatch):
    """compile_mode on the CPU compiles the model; a compiler error at the first step warns and trains eagerly, the
    same run as an eager one."""
    class Broken:
        def __init__(self, model):
            self.model = model

        def __call__(self, x):
            raise RuntimeError("backend compiler failed")

    monkeypatch.setattr(torch, "compile", lambda model, mode=None, dynamic=None: Broken(model))
    eager = _run(1)
    with pytest.warns(UserWarning, match="torch.compile failed .*training eagerly"):
        fallen = _run(1, compile_mode="reduce-overhead")
    assert fallen[1].compiled is False and eager[1].compiled is None  # the log says the run fell back
    assert dataclasses.replace(fallen[1], compiled=None) == eager[1]


@pytest.mark.parametrize("error", [RuntimeError("CUDA error: out of memory"),
                                   torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")])
def test_a_compile_out_of_device_memory_fails_a_campaign_trial(monkeypatch, error):
    """Under the runner's guard, a compile that ran the device out of memory raises instead of training eagerly;
    any other compiler error still falls back."""
    from analysis.core.runner import compile_out_of_memory_fails

    class Broken:
        def __init__(self, model, exc):
            self.model, self.exc = model, exc

        def __call__(self, x):
            raise self.exc

    monkeypatch.setattr(torch, "compile", lambda model, mode=None, dynamic=None: Broken(model, error))
    with compile_out_of_memory_fails(), pytest.raises(UserWarning, match="out of memory"):
        _run(1, compile_mode="reduce-overhead")
    monkeypatch.setattr(torch, "compile", lambda model, mode=None, dynamic=None: Broken(model, RuntimeError("bad")))
    with compile_out_of_memory_fails(), pytest.warns(UserWarning, match="torch.compile failed"):
        assert _run(1, compile_mode="reduce-overhead")[1].compiled is False


def test_auto_compiles_long_runs_on_cuda_only():
    """compile_mode "auto": CUDA graphs on CUDA for runs of COMPILE_MIN_STEPS or more, eager otherwise."""
    from analysis.training.train import COMPILE_MIN_STEPS, resolve_compile_mode

    assert resolve_compile_mode("auto", "cuda", COMPILE_MIN_STEPS) == "reduce-overhead"
    assert resolve_compile_mode("auto", "cuda", COMPILE_MIN_STEPS - 1) is None
    assert resolve_compile_mode("auto", "cpu", 10**6) is None
    assert resolve_compile_mode("default", "cpu", 1) == "default" and resolve_compile_mode(None, "cuda", 10**6) is None


def test_train_lm_options_are_validated():
    with pytest.raises(ValueError, match="check_every must be a positive integer"):
        _run(check_every=0)
    with pytest.raises(ValueError, match="compile_mode must be"):
        _run(compile_mode="fastest")


def test_compiled_training_follows_eager_training():
    """compile_mode 'default' (inductor, as on CUDA without its graphs) trains the same run as eager, to float32
    rounding: logged losses within 1e-5 relative after 8 steps (the tolerance: reordered float32 sums)."""
    tokens = np.frombuffer(b"abcdefgh" * 300, dtype=np.uint8).copy()
    logs = []
    for mode in (None, "default"):
        torch.manual_seed(0)
        logs.append(train_lm(LanguageModel(CFG), tokens, TrainConfig(steps=8, batch=4), 16, torch.device("cpu"),
                             progress=False, log_every=1, compile_mode=mode))
    assert logs[0].steps == logs[1].steps and (logs[0].compiled, logs[1].compiled) == (None, True)
    assert logs[1].train_loss == pytest.approx(logs[0].train_loss, rel=1e-5)
