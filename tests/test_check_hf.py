"""`analysis check --kind hf` on tiny Hugging Face models built here from configs (two layers, random weights, no
download): GPT-2, Llama and a BERT-style masked LM pass; planted cache bugs fail the decoding check."""

import json
import os

import pytest
import torch

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # nothing is downloaded: every model is built from its config here
transformers = pytest.importorskip("transformers")

from analysis.models.check import CheckInputError, check_module, rounding_threshold  # noqa: E402

VOCAB, WIDTH = 96, 32
# Weights ten times Hugging Face's default scale: attention far from uniform, as in a trained model, so that a
# position error moves the logits thousands of times the threshold (at the default scale, about ten times).
INIT = 0.2


def gpt2(**kw):
    torch.manual_seed(0)
    cfg = transformers.GPT2Config(vocab_size=VOCAB, n_embd=WIDTH, n_layer=2, n_head=4, n_positions=256,
                                  bos_token_id=0, eos_token_id=0, **{"initializer_range": INIT, **kw})
    return transformers.GPT2LMHeadModel(cfg)


def llama_config(**kw):
    return transformers.LlamaConfig(vocab_size=VOCAB, hidden_size=WIDTH, intermediate_size=64, num_hidden_layers=2,
                                    num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256,
                                    **{"initializer_range": INIT, **kw})


def llama(cls=None, **kw):
    torch.manual_seed(0)
    return (cls or transformers.LlamaForCausalLM)(llama_config(**kw))


def bert():
    torch.manual_seed(0)
    return transformers.BertForMaskedLM(transformers.BertConfig(
        vocab_size=VOCAB, hidden_size=WIDTH, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64,
        max_position_embeddings=256, initializer_range=INIT))


def _cached(past_key_values) -> bool:
    return past_key_values is not None and past_key_values.get_seq_length() > 0


class RopeOffByOne(transformers.LlamaForCausalLM):
    """A cache whose rotary offset is one too far: every token after the cached ones is rotated as if one later."""

    def forward(self, input_ids=None, position_ids=None, past_key_values=None, **kw):
        if _cached(past_key_values) and position_ids is not None:
            position_ids = position_ids + 1
        return super().forward(input_ids=input_ids, position_ids=position_ids, past_key_values=past_key_values, **kw)


class DropsMaskAtCache(transformers.LlamaForCausalLM):
    """A cache that drops the mask at its boundary: a new token sees every cached key, padding included."""

    def forward(self, input_ids=None, attention_mask=None, past_key_values=None, **kw):
        if _cached(past_key_values) and attention_mask is not None:
            attention_mask = torch.ones_like(attention_mask)
        return super().forward(input_ids=input_ids, attention_mask=attention_mask, past_key_values=past_key_values,
                               **kw)


LENGTHS = [16, 19, 24, 32, 40, 48]  # short, so that each test takes a second or two


@pytest.mark.parametrize("make", [gpt2, llama], ids=["gpt2", "llama"])
def test_tiny_causal_models_pass_every_check_including_decoding(make):
    report = check_module(make(), "hf", lengths=LENGTHS)
    assert report.passed, report.lines()
    assert {(r.check, r.mode) for r in report.results} == {
        *((c, m) for c in ("causal", "padding", "left-padding", "batch") for m in ("eval", "train")),
        ("decoding", "eval")}
    decoding = [r for r in report.results if r.check == "decoding"]
    assert [r.dtype for r in decoding] == ["float64", "float32"] and len(decoding[0].per_position) == LENGTHS[-1]
    assert report.lines()[0].endswith("(hf, mask attention_mask, cpu):")


def test_a_masked_language_model_passes_its_checks_and_is_not_decoded():
    report = check_module(bert(), "hf", lengths=LENGTHS)
    assert report.passed, report.lines()
    assert {r.check for r in report.results} == {"padding", "left-padding", "batch"}
    assert "masked language model" in report.skipped[0]
    assert not check_module(bert(), "hf", lengths=LENGTHS, checks=["causal"], modes=["eval"]).passed  # both ways
    with pytest.raises(CheckInputError, match="decoding check needs a causal Hugging Face model"):
        check_module(bert(), "hf", checks=["decoding"])


@pytest.mark.parametrize("cls, sample", [(RopeOffByOne, {0, 1}), (DropsMaskAtCache, {1})],
                         ids=["rope-offset", "mask-dropped"])
def test_planted_cache_bugs_fail_the_decoding_check_and_nothing_else(cls, sample):
    report = check_module(llama(cls), "hf", lengths=LENGTHS, modes=["eval"])
    bad = [r for r in report.results if not r.passed]
    assert {(r.check, r.dtype) for r in bad} == {("decoding", "float64"), ("decoding", "float32")}, report.lines()
    assert report.lines()[-1] == "  verdict: FAILS: decoding"
    assert all(r.worst > 1000 * r.threshold for r in bad)
    # the full pass is right: only the positions decoded through the cache move
    assert all(r.first_position >= LENGTHS[0] for r in bad)
    # which samples move: an offset moves both, a dropped mask only the left-padded one
    model = llama(cls).double().eval()
    from analysis.models.check import _keep, _Runner

    run = _Runner(model, "hf", VOCAB, "none", None, None, torch.device("cpu"), None, True)
    x = run.inputs(2, LENGTHS[-1], 0, torch.float64)
    keep = _keep(2, LENGTHS[-1], 0, LENGTHS[-1])
    keep[1, : LENGTHS[0] // 2] = False
    moved = (run.decode(x, keep, LENGTHS[0]) - run(x, keep)).abs().amax(dim=(1, 2)) * keep[:, -1]
    assert {b for b in range(2) if moved[b] > 1e-6} == sample


def test_the_models_config_gives_vocab_and_longest_input_and_float32_steps_are_stated():
    report = check_module(llama(), "hf", lengths=LENGTHS, checks=["causal"], modes=["eval"])
    f64 = report.results[0]
    # Llama's RMSNorm rounds its float64 input to float32: float32's threshold, and the line says why
    assert f64.computes_in == "float32" and f64.threshold == rounding_threshold(torch.float32, LENGTHS[-1])
    assert "float64 (steps in float32)" in f64.line()
    assert check_module(gpt2(), "hf", lengths=LENGTHS, checks=["causal"], modes=["eval"]).results[0].computes_in \
        is None
    with pytest.raises(ValueError, match="lengths must be at most 256, the model's longest input"):
        check_module(gpt2(), "hf", lengths=[32, 300])
    with pytest.raises(CheckInputError, match="the module raised IndexError"):
        check_module(gpt2(), "hf", vocab=VOCAB * 4, lengths=LENGTHS, checks=["causal"])  # ids past its embedding


def test_config_dropout_is_turned_off_in_train_mode():
    report = check_module(llama(attention_dropout=0.5), "hf", lengths=LENGTHS, checks=["causal", "batch"])
    assert report.passed and {r.mode for r in report.results} == {"eval", "train"}
    model = gpt2(resid_pdrop=0.5, attn_pdrop=0.5, embd_pdrop=0.5)
    assert check_module(model, "hf", lengths=LENGTHS, checks=["causal"]).passed
    assert model.transformer.drop.p == 0.5  # the user's model is left as it was


def test_half_precision_and_autocast_use_their_dtypes_threshold():
    report = check_module(llama(), "hf", lengths=LENGTHS, autocast="bf16", modes=["eval"])
    assert report.passed, report.lines()
    ac = [r for r in report.results if r.autocast == "bfloat16"]
    assert ac and all(r.threshold == rounding_threshold(torch.bfloat16, LENGTHS[-1]) for r in ac)
    half = check_module(gpt2().to(torch.bfloat16), "hf", lengths=LENGTHS, modes=["eval"])
    assert half.passed and {r.dtype for r in half.results} == {"float64", "bfloat16"}


def test_the_command_checks_a_hugging_face_model(tmp_path, monkeypatch, capsys):
    from analysis.cli.main import main

    (tmp_path / "hf_targets.py").write_text(
        "import sys\n"
        f"sys.path.insert(0, {os.path.dirname(__file__)!r})\n"
        "from test_check_hf import gpt2, llama, RopeOffByOne\n"
        "def planted():\n    return llama(RopeOffByOne)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    lengths = ["--lengths", *map(str, LENGTHS)]
    assert main(["check", "hf_targets:gpt2", "--kind", "hf", *lengths]) == 0
    out = capsys.readouterr().out
    assert "decoding (one token per call through the cache)" in out and "verdict: passes every check" in out
    assert main(["check", "hf_targets:planted", "--kind", "hf", "--json", "--modes", "eval", *lengths]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert doc["failing"] == ["decoding"]
