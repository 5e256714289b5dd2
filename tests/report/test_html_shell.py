"""One shell for every HTML page assay writes (the eval report in both layouts, the comparison,
the judge agreement page): the same head, a Content-Security-Policy as strict as each page
allows, the shared colours, and an environment that escapes every value and refuses an
undefined name."""

from __future__ import annotations

import re

import jinja2
import pytest
from compare._results import case as compared_case
from compare._results import eval_set, scored

from assay.agreement.agree import AgreeReport, Compared
from assay.agreement.labels import Label
from assay.agreement.render import render_agreement_html
from assay.agreement.stats import agreement
from assay.compare import compare_runs, render_comparison_html
from assay.llm.base import TokenUsage
from assay.report import html_large
from assay.report.html import render_html
from assay.report.page import environment
from report._html_cases import case, results

FAILED = 2
NO_SCRIPT = "default-src 'none'; style-src 'unsafe-inline'"
REPORT = f"{NO_SCRIPT}; script-src 'unsafe-inline'; img-src data:"
HEAD = re.compile(r"\A(.*?)<title>(.*?)</title>\n<style>\n(.*?)</style>\n</head>\n<body>\n", re.S)
POLICY = re.compile(r'<meta http-equiv="Content-Security-Policy" content="([^"]*)">\n')


def _report() -> str:
    return render_html([results(case("a", FAILED, score=0.0))])


def _large(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setattr(html_large, "LARGE_RUN", 1)
    page = render_html([results(case("a", FAILED, score=0.0), case("b", FAILED, score=0.0))])
    assert 'id="large-note"' in page
    return page


def _agreement() -> str:
    label = Label(case="c", invocation=1, criterion="safety_v1", label="safe")
    found = agreement([("safe", "unsafe")], positive="safe")
    report = AgreeReport(
        (Compared(label, "unsafe", "note"),),
        {"safety_v1": found},
        found,
        {"safety_v1": "openai:stub"},
        TokenUsage(),
    )
    return render_agreement_html(report)


def _comparison() -> str:
    base = eval_set("s", compared_case("a", {"m": scored(1.0)}))
    candidate = eval_set("s", compared_case("a", {"m": scored(0.1)}))
    return render_comparison_html(compare_runs([base], [candidate], resamples=50))


@pytest.fixture
def pages(monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    return {
        "report": _report(),
        "large": _large(monkeypatch),
        "agreement": _agreement(),
        "comparison": _comparison(),
    }


def test_every_page_opens_with_the_same_head_but_for_its_policy_and_title(
    pages: dict[str, str],
) -> None:
    heads = {}
    for name, page in pages.items():
        head = HEAD.match(page)
        assert head is not None, name
        heads[name] = POLICY.sub("", head.group(1))
    assert len(set(heads.values())) == 1
    opening = heads["report"]
    assert opening.startswith('<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n')
    assert '<meta name="viewport" content="width=device-width, initial-scale=1">' in opening
    assert '<meta name="generator" content="assay ' in opening


def test_only_the_report_pages_may_run_their_own_script_and_no_page_loads_anything(
    pages: dict[str, str],
) -> None:
    policies = {name: POLICY.findall(page) for name, page in pages.items()}
    assert policies == {
        "report": [REPORT],
        "large": [REPORT],
        "agreement": [NO_SCRIPT],
        "comparison": [NO_SCRIPT],
    }
    assert "<script" not in pages["agreement"] and "<script" not in pages["comparison"]


def test_every_page_defines_the_shared_colours_before_its_own_style(
    pages: dict[str, str],
) -> None:
    for name, page in pages.items():
        head = HEAD.match(page)
        assert head is not None, name
        assert head.group(3).startswith(":root { --ok: #1a7f37; --bad: #cf222e;"), name


def test_the_pages_environment_escapes_every_value_and_refuses_an_undefined_name() -> None:
    template = environment().from_string("<p>{{ text }}</p>")
    assert template.render(text="<b>&</b>") == "<p>&lt;b&gt;&amp;&lt;/b&gt;</p>"
    with pytest.raises(jinja2.UndefinedError):
        template.render()
