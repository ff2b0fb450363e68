"""What published work reports on this chapter's questions, and at what scale: the rows of its published-work table
(:func:`analysis.studies.published.published_table`), beside the claims of this book on the same question."""

from __future__ import annotations

from analysis.studies.published import Published

ROWS: tuple[Published, ...] = (
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
)
