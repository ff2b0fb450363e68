"""What published work reports on this chapter's questions, and at what scale: the rows of its published-work table
(:func:`analysis.studies.published.published_table`), beside the claims of this book on the same question."""

from __future__ import annotations

from analysis.studies.published import Published

ROWS: tuple[Published, ...] = (
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
)
