"""What published work reports on this chapter's questions, and at what scale: the rows of its published-work table
(:func:`analysis.studies.published.published_table`), beside the claims of this book on the same question."""

from __future__ import annotations

from analysis.studies.published import Published

ROWS: tuple[Published, ...] = (
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
)
