"""`--format`'s writers (runners/formats.py): CSV is RFC 4180 and reads back as written, Markdown renders as one
table whatever a cell holds (hostile values from result files included), JSON always parses."""

from __future__ import annotations

import csv
import io
import json
import math
from html.parser import HTMLParser

import markdown

from runners import formats

HOSTILE = 'a|b <script>alert(1)</script> *x* [l](javascript:x) `c` \\ "q", new\nline'
TABLE = formats.Table(
    columns=("name", "value", "ok", "runs"),
    rows=[(HOSTILE, 1.5, True, ["r1", "r2"]), ("=cmd|' /C calc'!A0", None, False, []), ("plain", 3, None, ["r3"])],
    title="a title",
    notes=("1 | 2 summary",),
)


class _Cells(HTMLParser):
    """The rendered tables' cells, row by row, and every tag seen."""

    def __init__(self) -> None:
        super().__init__()
        self.tables, self.rows, self.tags, self._cell = 0, [], [], None

    def handle_starttag(self, tag, attrs) -> None:
        self.tags.append(tag)
        if tag == "table":
            self.tables += 1
        elif tag == "tr":
            self.rows.append([])
        elif tag in ("td", "th"):
            self._cell = ""

    def handle_endtag(self, tag) -> None:
        if tag in ("td", "th"):
            self.rows[-1].append(self._cell)
            self._cell = None

    def handle_data(self, data) -> None:
        if self._cell is not None:
            self._cell += data


def rendered(md: str) -> _Cells:
    parser = _Cells()
    parser.feed(markdown.markdown(md, extensions=["tables"]))
    return parser


def test_csv_is_rfc_4180_with_a_header() -> None:
    out = formats.to_csv(TABLE)
    assert out.endswith("\r\n") and out.count("\r\n") == 4  # CRLF ends records; a value's newline is quoted
    rows = list(csv.reader(io.StringIO(out, newline="")))
    assert rows[0] == ["name", "value", "ok", "runs"]
    assert rows[1] == [HOSTILE, "1.5", "true", "r1; r2"]  # quotes, commas and a newline survive the round trip
    assert rows[2][0].startswith("'=cmd") and rows[2][1:] == ["", "false", ""]  # no formula; None is empty
    assert rows[3] == ["plain", "3", "", "r3"]


def test_markdown_renders_as_one_table_whatever_a_cell_holds() -> None:
    html = rendered(formats.to_markdown(TABLE))
    assert html.tables == 1 and len(html.rows) == 4
    assert all(len(r) == 4 for r in html.rows)  # a '|' in a value did not split its cell
    assert html.rows[0] == ["name", "value", "ok", "runs"]
    assert html.rows[1][0] == " ".join(HOSTILE.split())  # shown as written: no tag, no emphasis, no link
    assert "script" not in html.tags and "em" not in html.tags and "a" not in html.tags and "code" not in html.tags


def test_json_always_parses() -> None:
    data = {"a": math.inf, "b": [math.nan, 1.0], "c": HOSTILE}
    assert json.loads(formats.to_json(data)) == {"a": None, "b": [None, 1.0], "c": HOSTILE}
    text = formats.render("text", text="hello", data=None, table=TABLE)
    assert text == "hello\n"
    assert formats.render("md", text="", data=None, table=TABLE, md=lambda: formats.Table(columns=("x",), rows=[]))
