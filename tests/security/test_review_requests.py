"""Attacks through requests to the review app: the token must not reach the access log, and a page on
another site must not make a decision with the reviewer's cookie (cross-site request forgery)."""

from __future__ import annotations

import http.client
import json
import logging

import pytest

from flywheel.review.app import ReviewState, start_server
from flywheel.review.sampling import draw_sample
from tests.review.conftest import build_review_lake

TOKEN = "t0ken-that-must-not-be-logged"


@pytest.fixture(scope="module")
def review_server(tmp_path_factory):
    lake = build_review_lake(tmp_path_factory.mktemp("review") / "lake")
    state = ReviewState(lake, draw_sample(lake, size=10, seed=0), "nobody", TOKEN)
    server, thread = start_server(state)
    yield state, server.server_port
    server.shutdown()
    thread.join()
    server.server_close()


def request(port: int, method: str, path: str, body: dict | None = None, headers: dict | None = None):
    con = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        con.request(method, path, body=json.dumps(body).encode() if body is not None else None,
                    headers={"Content-Type": "application/json", **(headers or {})})
        resp = con.getresponse()
        return resp.status, resp.read().decode(errors="replace")
    finally:
        con.close()


def test_the_token_is_not_written_to_the_access_log(review_server, caplog):
    _, port = review_server
    with caplog.at_level(logging.INFO, logger="werkzeug"):
        assert request(port, "GET", f"/?token={TOKEN}&reviewer=alice")[0] == 302
        assert request(port, "GET", "/?token=wrong-guess")[0] == 403
    logged = "\n".join(r.getMessage() for r in caplog.records)
    assert "GET /?token=<redacted>&reviewer=alice" in logged
    assert TOKEN not in logged and "wrong-guess" not in logged


COOKIE = {"Cookie": f"review_token={TOKEN}; reviewer=mallory"}
DECISION = {"decision": "accept", "review_id": "csrf-decision-1"}


@pytest.mark.parametrize("headers", [
    {"Origin": "https://evil.example"},
    {"Origin": "null"},
    {"Sec-Fetch-Site": "cross-site", "Origin": "https://evil.example"},
    {"Sec-Fetch-Site": "same-site"},
    {},  # neither header: not sent by a browser page of ours
])
def test_a_decision_from_another_origin_is_refused_and_lands_nothing(review_server, headers):
    state, port = review_server
    status, _ = request(port, "POST", "/decide/0", DECISION, COOKIE | headers)
    assert status == 403
    assert not state.lake.files("reviews")


def test_a_decision_from_the_review_page_itself_lands(review_server):
    state, port = review_server
    own = {"Origin": f"http://127.0.0.1:{port}", "Sec-Fetch-Site": "same-origin"}
    status, body = request(port, "POST", "/decide/0", DECISION | {"review_id": "own-decision-1"}, COOKIE | own)
    assert status == 200, body
    assert len(state.lake.files("reviews")) == 1
