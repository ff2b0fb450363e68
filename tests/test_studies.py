"""Every study is the whole of its chapter's logic: its notebook glues exactly the facts and figures the study
computes (nothing more, nothing missing) and holds no logic of its own."""

import json
import re
from pathlib import Path

import pytest
from matplotlib.figure import Figure

from analysis.studies.chapter import open_chapter
from analysis.studies.figure_check import check_figures
from analysis.core.registry import EXPERIMENTS, MODULES
from analysis.studies import STUDIES, gather, get_study, keep_figure_images

ROOT = Path(__file__).resolve().parents[1]
GLUE_ROLE = re.compile(r"\{glue(?::text|:md|:figure)?\}`([^`]+)`")
GLUE_DIRECTIVE = re.compile(r"```\{glue(?::text|:md|:figure)?\}\s+(\S+)")
MAX_CODE_LINES = 15


def _cells(chapter: str, kind: str) -> list[str]:
    nb = json.loads((ROOT / "book" / f"{chapter}.ipynb").read_text())
    return ["".join(c["source"]) for c in nb["cells"] if c["cell_type"] == kind]


def glue_names(chapter: str) -> set[str]:
    """Every glue name the chapter's prose uses (a format after ':' dropped)."""
    text = "\n".join(_cells(chapter, "markdown"))
    return {m.split(":")[0] for m in GLUE_ROLE.findall(text) + GLUE_DIRECTIVE.findall(text)}


def markdown_glue_names(chapter: str) -> set[str]:
    """The glue names the chapter's prose renders as Markdown ({glue:md} roles and directives)."""
    text = "\n".join(_cells(chapter, "markdown"))
    return {m.split(":")[0] for m in re.findall(r"\{glue:md\}(?:`([^`]+)`|\s+(\S+))", text) for m in m if m}


def commonmark_glue_names(chapter: str) -> set[str]:
    """The glue names the prose renders as CommonMark, without maths: {glue:md} roles, and directives without
    ':format: myst' (which MyST parses, maths included)."""
    text = "\n".join(_cells(chapter, "markdown"))
    roles = set(re.findall(r"\{glue:md\}`([^`:]+)", text))
    blocks = {m.group(1) for m in re.finditer(r"```\{glue:md\}\s+(\S+)\n(?!:format: myst)", text)}
    return roles | blocks


def test_there_are_studies_and_each_is_a_chapter_of_the_book():
    toc = (ROOT / "_toc.yml").read_text()
    assert STUDIES
    for chapter in STUDIES:
        study = get_study(chapter)
        assert f"file: book/{chapter}\n" in toc and (ROOT / "book" / f"{chapter}.ipynb").exists()
        assert study.EXPERIMENTS and all(name in EXPERIMENTS for name in study.EXPERIMENTS)
        assert (study.__doc__ or "").strip() and study.TITLE


def test_a_studys_experiments_are_found_by_discovery():
    assert MODULES["ffn-basics"] == "analysis.studies.ffn_basics.experiments.ffn_basics"
    assert EXPERIMENTS["ffn-basics"].NAME == "ffn-basics"


def test_every_experiment_lives_in_the_study_that_shows_it():
    """Each experiment's module is in the experiments/ folder of a study whose chapter lists it."""
    homes = {}
    for name, module in MODULES.items():
        parts = module.split(".")
        assert parts[:2] == ["analysis", "studies"] and parts[3] == "experiments", module
        homes[name] = parts[2]
    assert set(homes) == set(EXPERIMENTS)
    for name, study in homes.items():
        assert name in get_study(study).EXPERIMENTS, (name, study)


def test_a_kernel_without_figure_images_gets_a_png_formatter_and_the_inline_ones_stay():
    from types import SimpleNamespace

    import matplotlib.pyplot as plt
    from IPython.core.formatters import DisplayFormatter

    fig = plt.figure(figsize=(2, 1))
    fig.add_subplot().plot([0, 1])  # IPython draws no image of a figure without axes
    try:
        agg = SimpleNamespace(display_formatter=DisplayFormatter())  # a kernel under Agg: figures only as text
        assert agg.display_formatter.format(fig)[0].keys() == {"text/plain"}
        assert keep_figure_images(agg)
        png = agg.display_formatter.format(fig)[0]["image/png"]
        assert png.startswith("iVBORw0KGgo")  # base64 of the PNG signature
        assert not keep_figure_images(agg)  # the second call leaves the first formatter
        inline = SimpleNamespace(display_formatter=DisplayFormatter())
        inline.display_formatter.formatters["image/svg+xml"].for_type(Figure, lambda f: "<svg/>")
        assert not keep_figure_images(inline)  # the inline backend chose svg: no png is added
        assert "image/png" not in inline.display_formatter.format(fig)[0]
    finally:
        plt.close(fig)


def test_unknown_study_is_refused():
    with pytest.raises(ValueError, match="chapter must be one of the studies"):
        get_study("no_such_chapter")


@pytest.mark.parametrize("chapter", STUDIES)
def test_notebook_is_thin(chapter):
    code = [line for cell in _cells(chapter, "code") for line in cell.splitlines() if line.strip()]
    assert len(code) <= MAX_CODE_LINES, f"{chapter}: {len(code)} code lines"
    assert not any("glue(" in line or line.lstrip().startswith(("for ", "if ", "def ")) for line in code), code
    assert f'show("{chapter}")' in "\n".join(code)


def _texts(facts: dict) -> dict:
    """The facts as the page shows them: strings as they are, Markdown as its text (figures left out)."""
    return {name: (value if isinstance(value, str) else value._repr_markdown_() if hasattr(value, "_repr_markdown_")
                   else None) for name, value in facts.items() if not isinstance(value, Figure)}


def _check_values(made: dict, commonmark: set[str] = frozenset()) -> None:
    for name, value in made.items():
        assert isinstance(value, (str, Figure)) or hasattr(value, "_repr_markdown_"), (name, type(value))
        if isinstance(value, str):
            assert value.strip() and "nan" not in value.lower().split(), (name, value)
            # glue:text prints a string as it is: maths in it would reach the page as raw '$d$'
            assert not re.search(r"\$[^$\s][^$]*\$", value), f"{name} holds maths but is glued as text: {value!r}"
        elif name in commonmark and hasattr(value, "_repr_markdown_"):
            # glued Markdown is parsed without maths: its maths must arrive as MathJax spans (math_markdown)
            raw = re.sub(r"<span class=\"math[^>]*>.*?</span>|`[^`]*`", "", value._repr_markdown_() or "", flags=re.S)
            assert not re.search(r"(?<![\w\\])\$[^$\s][^$\n]{0,300}?\$", raw), f"{name}: raw maths in {raw[:300]!r}"


@pytest.mark.parametrize("chapter", STUDIES)
def test_facts_and_figures_are_what_the_prose_glues(chapter):
    """With the smoke run alone (what a reader without records sees) the study makes exactly the facts and figures
    its prose glues; with the checked-in records (what the book shows) it makes the same facts, and they are the
    same when the smoke runs are left out: every number the prose glues comes from the strongest evidence, and the
    smoke run is only a check that the code runs. The figures the book shows pass the figure check
    (:mod:`analysis.studies.figure_check`: no text over text or off the canvas, no legend over data, no empty panel, log
    axes with labelled ticks, colour bars, captions whose panel words match the layout)."""
    import dataclasses

    import matplotlib.pyplot as plt

    study = get_study(chapter)
    ch = open_chapter(chapter, study.TITLE, *study.EXPERIMENTS, directory=str(ROOT / "results"))
    assert all(len(runs) > 1 for runs in ch.runs.values()), "every experiment of a chapter has a record"
    smoke_only = dataclasses.replace(ch, runs={n: runs[:1] for n, runs in ch.runs.items()})
    records_only = dataclasses.replace(ch, runs={n: [r for r in runs if r.recorded] for n, runs in ch.runs.items()})
    made = gather(study, smoke_only)
    plt.close("all")
    used = glue_names(chapter)
    assert sorted(used - set(made)) == [], "glued by the prose but not made by the study"
    assert sorted(set(made) - used) == [], "made by the study but used nowhere in the prose"
    _check_values(made, commonmark_glue_names(chapter))
    for name in markdown_glue_names(chapter):  # glue:md renders only a text/markdown output
        assert hasattr(made[name], "_repr_markdown_"), f"{name} is glued as Markdown but has no Markdown form"
    problems = check_figures(chapter, dict(study.figures(ch)))  # the figures as the book shows them
    assert {name: found for name, found in problems.items() if found} == {}
    shown = study.facts(ch)
    assert set(shown) == set(study.facts(smoke_only))
    _check_values(shown, commonmark_glue_names(chapter))
    from_records = _texts(study.facts(records_only))
    assert {k: v for k, v in _texts(shown).items() if from_records.get(k) != v} == {}


def test_sentences_glue_as_markdown_and_unknown_names_are_refused():
    from analysis.studies.display import Markdown, sentences

    facts = sentences({"a": "A whole sentence.", "b": "3.2", "c": Markdown("kept")}, ("a", "c"))
    assert isinstance(facts["a"], Markdown) and facts["a"].data == "A whole sentence."
    assert facts["b"] == "3.2" and facts["c"].data == "kept"
    with pytest.raises(ValueError, match="names must be among the facts; not found: z"):
        sentences({"a": "x"}, ("z",))
