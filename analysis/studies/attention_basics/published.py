"""What published work reports on this chapter's questions, and at what scale: the rows of its published-work table
(:func:`analysis.studies.published.published_table`), beside the claims of this book on the same question."""

from __future__ import annotations

from analysis.studies.published import Published

ROWS: tuple[Published, ...] = (
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
)
