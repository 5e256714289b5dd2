"""The view's guards over real HTTP: the key (401 without, 403 wrong, the printed URL's cookie),
the CSRF token and Origin on state changes, the CSP header on every page, and hostile text
escaped on every page that shows it."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from assay.view import ViewServer, ViewSettings
from view.test_runs_pages import HOSTILE_ID, Runs, write_history

KEY = "s3cret-key-for-tests"


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Runs:
    return write_history(tmp_path_factory.mktemp("security") / "history.sqlite")


@pytest.fixture(scope="module")
def keyed(runs: Runs) -> Iterator[ViewServer]:
    server = ViewServer(ViewSettings(runs.history, key=KEY)).start()
    try:
        yield server
    finally:
        server.stop()


def base(server: ViewServer) -> str:
    return f"http://127.0.0.1:{server.port}"


def test_a_request_without_the_key_gets_401_and_a_wrong_key_403(keyed: ViewServer) -> None:
    with httpx.Client() as client:
        assert client.get(base(keyed) + "/").status_code == 401
        assert client.get(base(keyed) + "/runs/latest").status_code == 401
        wrong = client.get(base(keyed) + "/", headers={"X-Assay-Key": "not-it"})
        assert wrong.status_code == 403
        assert client.get(base(keyed) + "/?key=not-it").status_code == 403


def test_the_printed_urls_key_sets_a_cookie_later_requests_use(keyed: ViewServer) -> None:
    assert keyed.url.endswith(f"/?key={KEY}")
    with httpx.Client() as client:
        first = client.get(keyed.url)
        assert first.status_code == 200
        assert "HttpOnly" in first.headers["set-cookie"]
        later = client.get(base(keyed) + "/runs/latest")  # no key in the URL: the cookie
        assert later.status_code == 200
        assert KEY not in first.text and KEY not in later.text


def test_a_post_without_the_csrf_token_or_from_another_origin_is_refused(
    keyed: ViewServer,
) -> None:
    headers = {"X-Assay-Key": KEY}
    with httpx.Client(headers=headers) as client:
        page = client.get(base(keyed) + "/").text
        token = page.split('name="csrf-token" content="', 1)[1].split('"', 1)[0]
        no_token = client.post(base(keyed) + "/label", json={"label": "yes"})
        assert no_token.status_code == 403
        wrong = client.post(base(keyed) + "/label", json={}, headers={"X-CSRF-Token": "forged"})
        assert wrong.status_code == 403
        other_origin = client.post(
            base(keyed) + "/label",
            json={},
            headers={"X-CSRF-Token": token, "Origin": "http://evil.example"},
        )
        assert other_origin.status_code == 403
        form = client.post(base(keyed) + "/label", data={"_csrf": "forged", "label": "yes"})
        assert form.status_code == 403
        allowed = client.post(base(keyed) + "/label", json={}, headers={"X-CSRF-Token": token})
        assert allowed.status_code != 403


def test_every_page_and_refusal_carries_the_content_security_policy(
    keyed: ViewServer, runs: Runs
) -> None:
    with httpx.Client(headers={"X-Assay-Key": KEY}) as client:
        for path in ("/", f"/runs/{runs.big}", "/runs/nope", "/static/run.js"):
            csp = client.get(base(keyed) + path).headers["content-security-policy"]
            assert "script-src 'self'" in csp and "default-src 'none'" in csp
    with httpx.Client() as anonymous:
        assert "content-security-policy" in anonymous.get(base(keyed) + "/").headers


def test_pages_have_no_inline_script(keyed: ViewServer, runs: Runs) -> None:
    with httpx.Client(headers={"X-Assay-Key": KEY}) as client:
        for path in ("/", f"/runs/{runs.big}"):
            html = client.get(base(keyed) + path).text
            assert "<script>" not in html and " on" + "click=" not in html


def test_hostile_ids_reasons_and_metric_reasons_are_escaped_on_every_page(
    keyed: ViewServer, runs: Runs
) -> None:
    paths = [
        "/",
        f"/runs/{runs.big}?status=not_evaluated",
        f"/runs/{runs.big}?q=img",
        f"/runs/{runs.big}?q=%3Cimg+src%3Dx+onerror%3D%22window.__pwned%3D1%22%3E",
        f"/runs/{runs.big}?metric=%3C/script%3E%3Cscript%3Ealert(1)%3C/script%3E",
    ]
    with httpx.Client(headers={"X-Assay-Key": KEY}) as client:
        shown = 0
        for path in paths:
            html = client.get(base(keyed) + path).text
            assert "<img src=x" not in html
            assert "<script>window.__pwned" not in html and "<script>alert" not in html
            shown += "&lt;img src=x onerror=" in html
        assert shown >= 2
        assert HOSTILE_ID not in client.get(base(keyed) + f"/runs/{runs.big}?q=img").text
