"""What published work reports on this chapter's questions, and at what scale: the rows of its published-work table
(:func:`analysis.studies.published.published_table`), beside the claims of this book on the same question."""

from __future__ import annotations

from analysis.studies.published import Published

ROWS: tuple[Published, ...] = (
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
)
