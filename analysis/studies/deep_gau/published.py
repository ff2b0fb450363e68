"""What published work reports on this chapter's questions, and at what scale: the rows of its published-work table
(:func:`analysis.studies.published.published_table`), beside the claims of this book on the same question."""

from __future__ import annotations

from analysis.studies.published import Published

ROWS: tuple[Published, ...] = (
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
)
