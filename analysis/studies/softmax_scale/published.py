"""What published work reports on this chapter's questions, and at what scale: the rows of its published-work table
(:func:`analysis.studies.published.published_table`), beside the claims of this book on the same question."""

from __future__ import annotations

from analysis.studies.published import Published

ROWS: tuple[Published, ...] = (
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
)
