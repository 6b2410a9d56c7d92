"""What a linked table sends is what the link controller accepts, and what it answers the table reads (the table side
does not import link/: controller/mqtt/link_wire.py mirrors link/protocol.py's messages)."""

from __future__ import annotations

from pathlib import Path

from controller.cli.preflight import check_file
from controller.engine.state import LinkContribution, LinkRequest
from controller.mqtt.link_wire import ResponseIn
from controller.shell.link_client import request_body
from link.protocol import HitOut, LinkResponse
from link.protocol import LinkRequest as LinkSide
from tests.link.conftest import link_toml

CONFIGS = Path(__file__).resolve().parents[2] / "configs"


def test_the_tables_requests_are_the_links() -> None:
    contribute = LinkRequest("contribute:r1", "contribute", "ms-01-r000001", (LinkContribution(2, "progressive", 500),))
    claim = LinkRequest(
        "claim:r1:2:mega", "claim", "ms-01-r000001", seat=2, level="mega", percent=100, rule="655a.11(i)(1)(iv)"
    )
    paid = LinkRequest(
        "paid:r1:2:mega", "paid", "ms-01-r000001", seat=2, level="mega", amount_cents=1_000_123, by="floor-ann"
    )
    for req in (contribute, claim, paid):
        sent = request_body(req).model_dump_json(exclude_none=True)
        assert LinkSide.model_validate_json(sent).kind == req.kind
    heard_paid = LinkSide.model_validate_json(request_body(paid).model_dump_json(exclude_none=True)).paid
    assert heard_paid is not None and (heard_paid.seat, heard_paid.amount_cents, heard_paid.by) == (
        2,
        1_000_123,
        "floor-ann",
    )
    hit = HitOut(
        table_id="ms-01",
        asset_number="A-01",
        round_id="r",
        seat=2,
        level="mega",
        order=9,
        amount_cents=5,
        meter_before_cents=5,
    )
    answer = LinkResponse(ok=True, kind="claim", status="open", lease_ms=2000, display={"mega": 1}, hit=hit)
    heard = ResponseIn.model_validate_json(answer.model_dump_json(exclude_none=True))
    assert heard.hit is not None and (heard.hit.order, heard.hit.amount_cents, heard.lease_ms) == (9, 5, 2000)


def _linked(tmp_path: Path, paytable: str, table_id: str = "ms-01") -> Path:
    (tmp_path / "link.toml").write_text(link_toml("dbname=link", "mqtt://127.0.0.1:1883", "tablectl"))
    text = (CONFIGS / "mississippi-stud-progressive.toml").read_text()
    text = text.replace('table_id = "ms-progressive-01"', f'table_id = "{table_id}"')
    text = text.replace('progressive_paytable = "C"', f'progressive_paytable = "{paytable}"')
    text += '\n[progressive]\nlink = "mega"\nlink_config = "link.toml"\n'
    path = tmp_path / "table.toml"
    path.write_text(text)
    return path


def test_check_config_holds_the_table_against_the_links_levels(tmp_path: Path) -> None:
    ok = check_file(_linked(tmp_path, "B"))
    assert not [f for f in ok.findings if f.field.startswith("progressive")], ok.findings
    other = check_file(_linked(tmp_path, "C"))
    problem = next(f for f in other.errors if f.field == "progressive.link")
    assert "'minor'" in problem.problem and "keeps {'progressive': ['major', 'mega']}" in problem.problem
    stranger = check_file(_linked(tmp_path, "B", table_id="ms-09"))
    assert any(f.field == "table_id" and "does not list table 'ms-09'" in f.problem for f in stranger.errors)
