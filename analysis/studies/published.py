"""What published work reports on the questions this book measures, and at what scale, set beside this book's
verdicts: one table per chapter (:func:`published_table`), so that a reader sees where a verdict disagrees with
published work and why it might.

Each :class:`Published` row quotes one source's reported numbers (from its abstract, or for GAU-α from its released
code and its CLUE table), the scale they were measured at, the claims of this book that address the same question
(rendered with their verdict and the scale of the run behind them), and why the two may differ.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from analysis.core.verify import SIGNS, bounded, claim_numbers, claim_ref, ledger_link

# The config fields that say at what scale an experiment's run was made, shown beside its claims
SCALE_FIELDS: dict[str, tuple[str, ...]] = {
    "gau-quality": ("d", "layers", "ctx", "steps", "seeds"),
    "gau-length": ("d", "layers", "ctx", "text_steps", "seeds"),
    "flash-bench": ("d", "layers", "lengths"),
    "widening": ("train_d", "train_layers", "ctx", "wide_steps", "seeds"),
    "deep-gau": ("d", "depths", "steps", "seeds"),
    "norms-depth": ("depth_d", "depths", "d", "layers", "steps", "seeds"),  # the one-step depth sweep, the trained pair
    "softmax-scale-recall": ("d", "pairs", "steps", "seeds"),
    "attention-basics": (),  # each claim states the sizes it was measured at (d = 1 to 2,048, d = 512, ...)
    "ffn-basics": (),
    "gau-init": ("ns", "ss", "widths", "seeds"),
    "coord-check": ("widths", "depths", "ctx"),
    "entropy-bound": ("sample_classes", "samples_per_cell"),
    "entropy-lm": ("model.d", "model.layers", "model.ctx", "train.steps"),  # a dotted name reads a nested field
    "scale-gradient-notes": (),  # each claim states its n, d and scales
}


@dataclass(frozen=True)
class Published:
    """One source's reported result, its scale, the claims of this book on the same question, and why they may
    differ."""

    source: str
    address: str
    reports: str
    scale: str
    chapters: tuple[str, ...]
    claims: tuple[tuple[str, str], ...]  # (experiment, claim key)
    why: str


PUBLISHED: tuple[Published, ...] = (
    Published(
        "Hua, Dai, Liu and Le 2022, *Transformer Quality in Linear Time* (ICML)", "https://arxiv.org/abs/2202.10447",
        "FLASH matches the perplexity of improved Transformers (the paper's Transformer+ and Transformer++) at 512 and "
        "8K tokens of context, and trains up to 4.9x faster "
        "on Wiki-40B and 12.1x on PG-19 (auto-regressive) and 4.8x on C4 (masked LM).",
        "Language models of about 110 M parameters and more (the paper's smallest), on TPUs, at 512 to 8K tokens.",
        ("flash",), (("flash-bench", "quad-overtakes-transformer"), ("flash-bench", "flash-linear-time")),
        "The speed-ups are for accelerators at long context, where attention dominates; this book times a 2-core CPU "
        "at the sizes in the 'this book' column. The gpu campaign times FLASH-Quad, FLASH and Transformer++ on an "
        "H100.",
    ),
    Published(
        "Hua, Dai, Liu and Le 2022, *Transformer Quality in Linear Time* (ICML)", "https://arxiv.org/abs/2202.10447",
        "FLASH, built of GAU layers, matches the perplexity of improved Transformers (the paper's Transformer+ and "
        "Transformer++) over short (512) and long (8K) "
        "contexts.",
        "Language models of about 110 M parameters and more on Wiki-40B, PG-19 and C4, at 512 to 8K tokens.",
        ("gau_trained",), (("gau-quality", "flashquad-beats-transformer"), ("gau-quality", "flash-matches-flashquad")),
        "This book's models are more than two orders of magnitude smaller and train for hundreds of steps; the "
        "ordering can change with scale. The gpu campaign trains 33 M-parameter models at 1,024 tokens.",
    ),
    Published(
        "Su, Pan, Wen and Liu 2022, *GAU-α* (ZhuiyiAI; the CLUE table of its README, dev-set scores)",
        "https://github.com/ZhuiyiTechnology/GAU-alpha",
        "A base GAU model (24 GAU layers, hidden size 768: about a 12-layer BERT's parameters) scores at or above "
        "BERT, RoBERTa and RoFormer on 8 of 11 CLUE dev-set tasks: CMNLI 81.82 (BERT 79.56, RoBERTa 81.24), C3 68.24 "
        "(60.54, 67.66), CHID 87.91 (85.69, 86.71); below RoBERTa on TNEWS, OCNLI and WSC (79.93 against 87.50) and "
        "below RoFormer on OCNLI and WSC.",
        "Chinese masked-LM pre-training at base size (character vocabulary, whole-word masking, 512 tokens), then "
        "fine-tuning on CLUE.",
        ("gau_trained",), (("gau-quality", "flashquad-beats-transformer"),),
        "GAU-α is not the source's GAU: it uses softmax attention scaled by log n / log 512 (a row below), post-norm "
        "and a depth-scaled init, and is compared on fine-tuned accuracy, not pre-training loss.",
    ),
    Published(
        "Su, Pan, Wen and Liu 2022, *GAU-α* (ZhuiyiAI; its released models.py)",
        "https://github.com/ZhuiyiTechnology/GAU-alpha",
        "GAU-α's own choices: post-norm (GAU, add, then a norm without centring, scale or offset), softmax attention "
        "with its logits scaled by log n / log 512, n at least 16 ('softmax_plus') rather than relu², no biases, "
        "RoPE, and weights drawn from a truncated normal of standard deviation $L^{-1/3}/\\sqrt{\\text{fan-in}}$ "
        "($0.35/\\sqrt{\\text{fan-in}}$ at $L = 24$), not a fixed 0.02. Its released train.py pre-trains with LAMB "
        "(learning rate 1.76e-3) and no warm-up.",
        "The released base model (24 GAU layers, hidden size 768).",
        ("deep_gau", "gau_init"),
        (("deep-gau", "gau-lr-depth"), ("deep-gau", "gau-lr-no-warmup"), ("deep-gau", "gau-vs-postnorm-transformer"),
         ("gau-init", "rms-source"),
         ("gau-init", "lambda7"), ("gau-init", "gau-alpha-lambda7-softmax")),
        "The released model shrinks its init with depth instead of relying on the small size of a GAU layer at "
        "initialisation, on which the source rests its case against warm-up (it too trains without warm-up, but with "
        "LAMB); this book measures that size under "
        "LeCun and 0.02 inits, and trains the source's setting with Xavier init.",
    ),
    Published(
        "Su, Pan, Wen and Liu 2022, *GAU-α* (ZhuiyiAI; its released models.py)",
        "https://github.com/ZhuiyiTechnology/GAU-alpha",
        "GAU-α normalises attention with softmax, its logits scaled by log n / log 512, n at least 16 "
        "('softmax_plus'), not the relu² of the FLASH paper or of the source.",
        "The released base model (24 GAU layers, hidden size 768).",
        ("gau_trained",), (("gau-length", "log-scaling-beats-softmax"), ("gau-length", "relu2-length-text")),
        "A choice made for length transfer at base size; this book measures the length transfer of each "
        "normalisation at the small sizes in the 'this book' column.",
    ),
    Published(
        "Chen et al. 2022, *bert2BERT: Towards Reusable Pretrained Language Models* (ACL)",
        "https://arxiv.org/abs/2110.07143",
        "bert2BERT saves about 45% of the computational cost of pre-training BERT-base, and 47% for GPT-base, by "
        "initialising them from models of almost half their size (function-preserving and 'advanced knowledge' "
        "initialisation, then two-stage pre-training).",
        "BERT-base and GPT-base pre-training.",
        ("widening",), (("widening", "saving"),),
        "bert2BERT adds depth growth, advanced-knowledge initialisation and a two-stage schedule to the widening "
        "this book tests, and measures at base size over a full pre-training budget.",
    ),
    Published(
        "Wang et al. 2023, *Learning to Grow Pretrained Models for Efficient Transformer Training* (LiGO, ICLR)",
        "https://arxiv.org/abs/2303.00980",
        "A learned linear growth operator (width and depth, Kronecker-factorised) maps a smaller pretrained model's "
        "weights to a larger model's initialisation and saves up to 50% of the compute of training from scratch "
        "(about 45% of the FLOPs and 40% of the wall time when growing BERT), consistently ahead of baselines that "
        "also reuse smaller pretrained models.",
        "BERT and RoBERTa on English Wikipedia, GPT-2 on C4, vision Transformers (DeiT, CaiT) on ImageNet; base-size "
        "targets grown from smaller pretrained models.",
        ("widening",), (("widening", "saving"),),
        "LiGO learns its growth operator from data and grows depth too; this book tests the fixed, "
        "function-preserving widening of the source, on small byte-level models.",
    ),
    Published(
        "Wang et al. 2022, *DeepNet: Scaling Transformers to 1,000 Layers*", "https://arxiv.org/abs/2203.00555",
        "DeepNorm ($x \\leftarrow \\mathrm{LN}(\\alpha x + f(x))$ with a $\\beta$-scaled init) trains Transformers "
        "of up to 1,000 layers "
        "(2,500 sublayers); a 200-layer, 3.2 B-parameter model beats a 48-layer, 12 B-parameter one by 5 BLEU on a "
        "7,482-direction translation benchmark.",
        "Machine translation, 200 to 1,000 layers, billions of parameters.",
        ("norms_depth", "deep_gau"),
        (("norms-depth", "deepnorm-below-post"), ("norms-depth", "deepnorm-bounded"),
         ("deep-gau", "gau-vs-postnorm-transformer"), ("deep-gau", "gau-vs-strongest-transformer")),
        "This book's stacks are tens of layers deep and train for hundreds of steps; DeepNorm's advantage is "
        "stability at depths where post-norm diverges.",
    ),
    Published(
        "Henry, Dachapally, Pawar and Chen 2020, *Query-Key Normalization for Transformers* (Findings of EMNLP)",
        "https://arxiv.org/abs/2010.04245",
        "L2-normalising queries and keys along the head dimension and scaling them by a learnable parameter (instead "
        "of $1/\\sqrt{d}$) improves BLEU by 0.928 on average over 5 low-resource translation pairs. The parameter "
        "starts at $\\log_2(L^2 - L)$, $L$ the 97.5th percentile of the training sequences' lengths (its released "
        "layers.py).",
        "Low-resource machine translation (TED Talks, IWSLT'15).",
        ("softmax_scale",), (("softmax-scale-recall", "recall-best-scale-16"),
                             ("softmax-scale-recall", "recall-best-scale-64")),
        "QK-norm learns its scale from a length-dependent start; the source derives one in closed form, and this "
        "book measures which fixed cosine scale trains best on a recall task. The chapter's table of published "
        "choices sets QK-norm's start beside both.",
    ),
    # the chapters on foundations: what the papers that introduced each construction report, beside the notes' claims
    Published(
        "Vaswani et al. 2017, *Attention Is All You Need* (NeurIPS)", "https://arxiv.org/abs/1706.03762",
        "Dot products are scaled by $1/\\sqrt{d_k}$ because, the authors suspect, for large $d_k$ they grow large and "
        "push the softmax into regions of extremely small gradients: if the components of $q$ and $k$ are independent "
        "with mean 0 and variance 1, $q\\cdot k$ has mean 0 and variance $d_k$.",
        "Stated as the reason for the scale; the base model has 8 heads of $d_k = 64$ (WMT 2014 translation).",
        ("attention_basics",),
        (("attention-basics", "qk-variance"), ("attention-basics", "qk-normal"),
         ("attention-basics", "unscaled-saturates")),
        "The paper states the variance only. The notes add that $q\\cdot k$ is normal, which fails at small $d_k$ (its "
        "excess kurtosis is $6/d_k$ for normal $q$ and $k$); the saturation is measured here up to $d = 2048$.",
    ),
    Published(
        "Vaswani et al. 2017, *Attention Is All You Need* (NeurIPS)", "https://arxiv.org/abs/1706.03762",
        "Sinusoidal positions were chosen because for any fixed offset $k$, $PE_{pos+k}$ is a linear function of "
        "$PE_{pos}$, which the authors hypothesised would let the model attend by relative position; learned position "
        "embeddings gave nearly identical results (their Table 3, row E).",
        "The base Transformer (65 M parameters) on WMT 2014 English-German.",
        ("attention_basics",), (("attention-basics", "pe-shift"), ("attention-basics", "pe-projected")),
        "The linear map holds for PE itself. Once queries and keys are projected by learned W_q and W_k, the "
        "positional score depends on the absolute position too, which RoPE (next row) removes.",
    ),
    Published(
        "Su, Lu, Pan, Murtadha, Wen and Liu 2021, *RoFormer: Enhanced Transformer with Rotary Position Embedding*",
        "https://arxiv.org/abs/2104.09864",
        "RoPE encodes the absolute position with a rotation matrix and so makes self-attention depend on the "
        "relative position explicitly; RoFormer consistently overcomes its alternatives on long-text "
        "classification benchmarks.",
        "Translation (WMT 2014), BERT-style pre-training with GLUE fine-tuning, Chinese long-text classification.",
        ("attention_basics",), (("attention-basics", "rope-relative"),),
        "The relative dependence is an identity of the rotation and holds here to rounding; the quality gains are "
        "measured at the paper's scale, not here.",
    ),
    Published(
        "Vaswani et al. 2017, *Attention Is All You Need* (NeurIPS)", "https://arxiv.org/abs/1706.03762",
        "Residual dropout ($P_{drop} = 0.1$ in the base model) on the output of each sub-layer, before the residual "
        "sum "
        "and normalisation, and on the sums of embeddings and positional encodings; the FFN is two linear maps with "
        "a ReLU between, $d_{model} = 512$ and $d_{ff} = 2048$.",
        "The base model (65 M parameters) on WMT 2014 English-German and English-French.",
        ("ffn_basics",), (("ffn-basics", "dropout-sites"), ("ffn-basics", "ffn-8h2")),
        "torch.nn.Transformer also drops the attention weights and the FFN's hidden activations, so it has more "
        "dropout sites than the paper's text; the paper's FFN size counts weights, torch's layer adds $5H$ biases.",
    ),
    Published(
        "Shazeer 2020, *GLU Variants Improve Transformer*", "https://arxiv.org/abs/2002.05202",
        "GLU variants in the FFN (GEGLU, SwiGLU, ReGLU, bilinear) improve quality over the ReLU and GELU FFNs at "
        "equal parameters and operations: with three weight matrices instead of two, the hidden width is cut to 2/3, "
        "from $d_{ff} = 3072$ to 2048.",
        "T5-base (12 + 12 layers, width 768) pre-trained on C4, fine-tuned on GLUE, SuperGLUE and SQuAD.",
        ("ffn_basics",), (("ffn-basics", "swiglu-width"), ("ffn-basics", "glu-family")),
        "The paper's 2/3 is of the hidden width $d_{ff} = 4d$, which gives $8d/3$, the width the counted weights give "
        "here; the notes apply 2/3 to $d$.",
    ),
    Published(
        "Hendrycks and Gimpel 2016, *Gaussian Error Linear Units (GELUs)*", "https://arxiv.org/abs/1606.08415",
        "$\\mathrm{GELU}(x) = x\\Phi(x)$, $\\Phi$ the standard normal CDF, approximated by "
        "$0.5x(1 + \\tanh[\\sqrt{2/\\pi}(x + 0.044715x^3)])$ or $x\\sigma(1.702x)$; it improves on ReLU and ELU "
        "across the vision, language and speech "
        "tasks tried.",
        "Small networks on MNIST, CIFAR-10/100, TIMIT and Twitter part-of-speech tagging.",
        ("ffn_basics",), (("ffn-basics", "gelu-torch"), ("ffn-basics", "gelu-notes")),
        "The paper's $\\Phi$ is built on the standard erf (integrated from 0), as torch's is; the notes' erf "
        "integrates from 1, which gives another function.",
    ),
    Published(
        "Wang et al. 2022, *DeepNet: Scaling Transformers to 1,000 Layers*", "https://arxiv.org/abs/2203.00555",
        "DeepNorm bounds the model update of a post-norm Transformer by up-weighting the residual, $x \\leftarrow "
        "\\mathrm{LN}(\\alpha x + f(x))$, and down-scaling the branch init by $\\beta$: $\\alpha = (2N)^{1/4}$, "
        "$\\beta = (8N)^{-1/4}$ for an $N$-layer encoder-only model (encoder-decoder models use other constants); "
        "DeepNorm trains stacks of up to 1,000 layers.",
        "Machine translation, 200 to 1,000 layers, billions of parameters.",
        ("gau_init",), (("coord-check", "gau-branch-size"),),
        "The source equates a GAU branch of about 1% of its input at initialisation with DeepNorm at $\\alpha = 100$, "
        "far above DeepNet's $\\alpha$ at 1,000 layers; this book measures the branch in causal language-model stacks "
        "at initialisation.",
    ),
    Published(
        "Cover and Thomas 2006, *Elements of Information Theory* (2nd edition, section 2.10)",
        "https://doi.org/10.1002/047174882X",
        "Fano's inequality in its stronger form: the entropy of $X$ given $Y$ is at most $H(P_e) + P_e\\log(K - 1)$ "
        "for an estimate of $X$ with error probability $P_e$, $K$ the number of values of $X$, with equality (for $X$ "
        "alone, the notes' case) when the error mass is spread evenly over the other $K - 1$ values.",
        "A theorem: every distribution over a finite alphabet.",
        ("entropy",),
        (("entropy-bound", "closed-form-vs-direct"), ("entropy-bound", "bound-sampled"), ("entropy-lm", "lm-bound")),
        "None expected: the notes' curve is Fano's bound with $P_e = 1 - p$, so sampling and trained models can only "
        "confirm it.",
    ),
    Published(
        "Braverman, Chen, Kakade, Narasimhan, Zhang and Zhang 2020, *Calibration, Entropy Rates, and Memory in "
        "Language Models* (ICML)", "https://arxiv.org/abs/1906.05664",
        "Language models are miscalibrated in generation: the entropy rate of their own samples drifts upward, "
        "exp(entropy rate) against test perplexity: AWD-LSTM on PTB 93.1 against 58.3, a Transformer on the "
        "Billion Word benchmark 34.7 against 28.1, GPT-2 on WebText 61.2 against 23.7.",
        "LSTM and Transformer language models: word-level on PTB and the Billion Word benchmark, subword-level (GPT-2) "
        "on WebText.",
        ("entropy",),
        (("entropy-lm", "lm-calibration"), ("entropy-lm", "lm-calibration-gau"),
         ("entropy-lm", "lm-calibration-flash")),
        "The paper measures entropy on the model's own generations over long horizons; this book compares "
        "entropy and loss on held-out text, one step ahead, where a model fitted by cross-entropy is pushed "
        "towards calibration.",
    ),
    Published(
        "Wang, Cheng, Liu and Liu 2018, *Additive Margin Softmax for Face Verification*",
        "https://arxiv.org/abs/1801.05599",
        "Cosine logits of normalised 512-d face features and class weights, multiplied by a fixed scale s = 30.",
        "Face verification networks trained on CASIA-WebFace (10,575 identities).",
        ("source_checks",), (("scale-gradient-notes", "cosine-scale-am-softmax"),),
        "The source's α* is for the objective at initialisation, with random directions; a trained face model's "
        "cosines are far from random, and s was chosen for accuracy, not for the gradient at the start.",
    ),
    Published(
        "Gao, Yao and Chen 2021, *SimCSE* (EMNLP)", "https://arxiv.org/abs/2104.08821",
        "Contrastive sentence embeddings with cosine similarity divided by a temperature τ = 0.05, a scale of 20.",
        "BERT-base and RoBERTa encoders (768-d), in-batch negatives of batches of 64 sentences (unsupervised).",
        ("source_checks",), (("scale-gradient-notes", "cosine-scale-simcse"),),
        "Pre-trained encoders start far from random directions, so the source's random-cosine α* need not apply; "
        "the temperature was chosen by validation, not from the gradient at the start.",
    ),
)


def rows_for(chapter: str) -> list[Published]:
    """The published rows shown in ``chapter``."""
    return [p for p in PUBLISHED if chapter in p.chapters]


def distinct_digits(a: float, b: float, least: int = 3, most: int = 12) -> tuple[str, str]:
    """``a`` and ``b`` to ``least`` significant digits, or to the fewest (up to ``most``) at which two different
    numbers print differently (2,099,712 against 2,097,152 is 2.100e+06 against 2.097e+06, not 2.1e+06 twice)."""
    if least < 1 or most < least:
        raise ValueError(f"least must be in [1, most]; got least={least}, most={most}")
    for digits in range(least, most + 1):
        flag = "#" if digits > least else ""  # past the least digits, trailing zeros are digits shown on purpose
        pair = (f"{a:{flag}.{digits}g}", f"{b:{flag}.{digits}g}")
        if a == b or pair[0] != pair[1]:
            return pair
    return f"{a:.{least}g}", f"{b:.{least}g}"  # alike to the most digits: shown as alike as they print


def _shown(value: Any) -> str:
    """A config value as the table prints it, in words: a list or tuple as 'a, b and c'."""
    if isinstance(value, (list, tuple)):
        items = [_shown(v) for v in value]
        return " and ".join(items) if len(items) <= 2 else ", ".join(items[:-1]) + " and " + items[-1]
    return str(value)


def config_field(cfg: Any, name: str) -> Any:
    """The field ``name`` of a config (a dataclass, or a record's stored dict); a dotted name reads a nested field."""
    value = cfg
    for part in name.split("."):
        value = value[part] if isinstance(value, dict) else getattr(value, part)
    return value


def _scale_text(ch: Any, experiment: str) -> str:
    """The run behind an experiment's claims in ``ch``, marked stale when it is, and the config fields that say its
    scale, from the config the run was made with (:meth:`analysis.studies.chapter.RunSet.settings`)."""
    run = ch.best(experiment)
    cfg = run.settings(experiment)
    shown = []
    for name in SCALE_FIELDS.get(experiment, ()):
        shown.append(f"{name.rsplit('.', 1)[-1]} = {_shown(config_field(cfg, name))}")
    key = f"{run.key}, stale" if run.stale else run.key
    return f"{key}{': ' + '; '.join(shown) if shown else ''}"


def _ours(ch: Any, row: Published) -> str:
    """This book's claims on the row's question: the claim's number in the chapter (linked to the ledger; its key only
    when the claim has no number, measured by a smoke run alone), verdict, measured against predicted with the
    claim's relation (< 0, not a bare 0, for 'below 0'), and the run's scale."""

    numbers = claim_numbers(ch.claims.claims)
    parts, scales = [], {}
    for experiment, key in row.claims:
        if experiment not in ch.runs:
            continue
        try:
            c = ch.claim(experiment, key)
        except KeyError:
            parts.append(f"`{key}`: not measured by this build's runs")
            continue
        unit = f" {c.unit}" if c.unit else ""
        measured, predicted = distinct_digits(c.measured, c.predicted)
        number = numbers.get(claim_ref(c))
        name = f"`{key}`" if number is None else ledger_link(ch.doc, c, number)  # the number, not the code name
        parts.append(f"{name}: **{c.verdict}** ({bounded(c, measured)}{unit} measured, {SIGNS[c.kind]} {predicted}{unit} "
                     f"predicted)")
        if experiment not in scales:
            scales[experiment] = _scale_text(ch, experiment)
    return "; ".join(parts + [f"({s})" for s in scales.values()]) or "-"


def published_table(chapter: str, ch: Any) -> str:
    """Markdown: one row per published result shown in ``chapter``: source, what it reports, at what scale, this
    book's claims on the same question with their verdicts and scale, and why they may differ."""
    rows = rows_for(chapter)
    if not rows:
        raise ValueError(f"chapter {chapter!r} shows no published results; chapters with some: "
                         f"{', '.join(sorted({c for p in PUBLISHED for c in p.chapters}))}")
    head = "| source | reports | at what scale | this book | why they may differ |\n|---|---|---|---|---|"
    lines = [f"| [{p.source}]({p.address}) | {p.reports} | {p.scale} | {_ours(ch, p)} | {p.why} |" for p in rows]
    return "\n".join([head, *lines])
