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

# The config fields that say at what scale an experiment's run was made, shown beside its claims
SCALE_FIELDS: dict[str, tuple[str, ...]] = {
    "gau-quality": ("d", "layers", "ctx", "steps", "seeds"),
    "gau-length": ("d", "layers", "ctx", "text_steps", "seeds"),
    "flash-bench": ("d", "layers", "lengths"),
    "widening": ("train_d", "train_layers", "ctx", "wide_steps", "seeds"),
    "deep-gau": ("d", "depths", "steps", "seeds"),
    "norms-depth": ("d", "layers", "steps", "seeds"),
    "softmax-scale-recall": ("d", "pairs", "steps", "seeds"),
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
        "FLASH matches the perplexity of Transformer++ at 512 and 8K tokens of context, and trains up to 4.9x faster "
        "on Wiki-40B and 12.1x on PG-19 (auto-regressive) and 4.8x on C4 (masked LM).",
        "Language models of about 110 M parameters and more (the paper's smallest), on TPUs, at 512 to 8K tokens.",
        ("flash",), (("flash-bench", "quad-overtakes-transformer"), ("flash-bench", "flash-linear-time")),
        "The speed-ups are for accelerators at long context, where attention dominates; this book times a 2-core CPU "
        "at the sizes in the last column. The gpu campaign times FLASH-Quad, FLASH and Transformer++ on an H100.",
    ),
    Published(
        "Hua, Dai, Liu and Le 2022, *Transformer Quality in Linear Time* (ICML)", "https://arxiv.org/abs/2202.10447",
        "FLASH, built of GAU layers, matches the perplexity of Transformer++ over short (512) and long (8K) "
        "contexts.",
        "Language models of about 110 M parameters and more on Wiki-40B, PG-19 and C4, at 512 to 8K tokens.",
        ("gau_trained",), (("gau-quality", "flashquad-beats-transformer"), ("gau-quality", "flash-matches-flashquad")),
        "This book's models are 3 to 4 orders of magnitude smaller and train for hundreds of steps; the ordering can "
        "change with scale. The gpu campaign trains 33 M-parameter models at 1,024 tokens.",
    ),
    Published(
        "Su, Pan, Wen and Liu 2022, *GAU-α* (ZhuiyiAI; CLUE table as tabulated in JunnYu/GAU-alpha-pytorch)",
        "https://github.com/ZhuiyiTechnology/GAU-alpha",
        "A base GAU model (24 GAU layers, hidden size 768: a 12-layer BERT's parameters) scores at or above BERT, "
        "RoBERTa and RoFormer on most CLUE tasks: CMNLI 81.82 (BERT 79.56, RoBERTa 81.24), C3 68.24 (60.54, 67.66), "
        "CHID 87.91 (85.69, 86.71); below RoBERTa on TNEWS, OCNLI and WSC.",
        "Chinese character-level masked-LM pre-training at base size, then fine-tuning on CLUE.",
        ("gau_trained",), (("gau-quality", "flashquad-beats-transformer"),),
        "GAU-α is not the source's GAU: it uses softmax attention scaled by log n, post-norm and a depth-scaled "
        "init (next rows), and is compared on fine-tuned accuracy, not pre-training loss.",
    ),
    Published(
        "Su, Pan, Wen and Liu 2022, *GAU-α* (ZhuiyiAI; its released models.py)",
        "https://github.com/ZhuiyiTechnology/GAU-alpha",
        "GAU-α's own choices: post-norm (GAU, add, then a norm without centring, scale or offset), softmax attention "
        "scaled by log n ('softmax_plus') rather than relu², no biases, RoPE, and weights drawn from a truncated "
        "normal of standard deviation L^(-1/3)/sqrt(fan-in) (0.35/sqrt(fan-in) at L = 24), not a fixed 0.02.",
        "The released base model (24 GAU layers, hidden size 768).",
        ("deep_gau",), (("deep-gau", "gau-lr-no-warmup"), ("deep-gau", "gau-vs-postnorm-transformer")),
        "Its authors trained their deep GAU with a depth-scaled init, which the source's no-warmup argument does not "
        "need at init; this book trains the source's setting, with Xavier init.",
    ),
    Published(
        "Su, Pan, Wen and Liu 2022, *GAU-α* (ZhuiyiAI; its released models.py)",
        "https://github.com/ZhuiyiTechnology/GAU-alpha",
        "GAU-α normalises attention with softmax scaled by log n ('softmax_plus'), not the relu² of the FLASH paper "
        "or of the source.",
        "The released base model (24 GAU layers, hidden size 768).",
        ("gau_trained",), (("gau-length", "log-scaling-beats-softmax"), ("gau-length", "relu2-length-text")),
        "A choice made for length transfer at base size; this book measures the length transfer of each "
        "normalisation at the small sizes in the last column.",
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
        "Wang et al. 2022, *DeepNet: Scaling Transformers to 1,000 Layers*", "https://arxiv.org/abs/2203.00555",
        "DeepNorm (x <- LN(alpha x + f(x)) with a beta-scaled init) trains Transformers of up to 1,000 layers "
        "(2,500 sublayers); a 200-layer, 3.2 B-parameter model beats a 48-layer, 12 B-parameter one by 5 BLEU on a "
        "7,482-direction translation benchmark.",
        "Machine translation, 200 to 1,000 layers, billions of parameters.",
        ("norms_depth", "deep_gau"),
        (("norms-depth", "deepnorm-below-post"), ("norms-depth", "deepnorm-bounded"),
         ("deep-gau", "gau-vs-postnorm-transformer")),
        "This book's stacks are tens of layers deep and train for hundreds of steps; DeepNorm's advantage is "
        "stability at depths where post-norm diverges.",
    ),
    Published(
        "Henry, Dachapally, Pawar and Chen 2020, *Query-Key Normalization for Transformers* (Findings of EMNLP)",
        "https://arxiv.org/abs/2010.04245",
        "L2-normalising queries and keys along the head dimension and scaling them by a learnable parameter (instead "
        "of 1/sqrt(d)) improves BLEU by 0.928 on average over 5 low-resource translation pairs.",
        "Low-resource machine translation (TED Talks, IWSLT'15).",
        ("softmax_scale",), (("softmax-scale-recall", "recall-best-scale-16"),
                             ("softmax-scale-recall", "recall-best-scale-64")),
        "QK-norm learns its scale; the source derives one in closed form, and this book measures which fixed cosine "
        "scale trains best on a recall task.",
    ),
)


def rows_for(chapter: str) -> list[Published]:
    """The published rows shown in ``chapter``."""
    return [p for p in PUBLISHED if chapter in p.chapters]


def _scale_text(ch: Any, experiment: str) -> str:
    """The run behind an experiment's claims in ``ch`` and the config fields that say its scale."""
    from analysis.experiments import EXPERIMENTS, config_for

    run = ch.best(experiment)
    cfg = config_for(EXPERIMENTS[experiment], run.scale)
    fields = ", ".join(f"{f} = {getattr(cfg, f)}" for f in SCALE_FIELDS.get(experiment, ()) if hasattr(cfg, f))
    return f"{run.key}{': ' + fields if fields else ''}"


def _ours(ch: Any, row: Published) -> str:
    """This book's claims on the row's question: key, verdict, measured against predicted, and the run's scale."""
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
        parts.append(f"`{key}`: **{c.verdict}** ({c.measured:.3g}{unit} measured, {c.predicted:.3g}{unit} predicted)")
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
