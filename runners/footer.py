"""A Parquet file's key-value metadata as its footer holds it: every entry, in order, duplicates kept.

Readers disagree about a key written twice (pyarrow's `FileMetaData.metadata` is a dict, polars'
`read_parquet_metadata` another, each keeping its own one of the two), so a file's run entry is read from this list,
where a second entry cannot hide (runners/layout.py `footer_problem` refuses one). The footer is Thrift's compact
protocol (the Parquet format's `FileMetaData`, field 5 `key_value_metadata: list<KeyValue>`); this reads that field
and skips every other, each length checked against the bytes that remain.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

MAGIC = b"PAR1"
_MAX_DEPTH = 64
"""Deepest nesting of Thrift structures and lists read (Parquet's own nest a few levels)."""


class FooterError(ValueError):
    """A footer that is not Parquet's compact Thrift: truncated, or a length past its end."""


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data = data
        self.at = 0

    def byte(self) -> int:
        if self.at >= len(self.data):
            raise FooterError("the footer ends inside a field")
        self.at += 1
        return self.data[self.at - 1]

    def varint(self) -> int:
        shift = result = 0
        while True:
            b = self.byte()
            result |= (b & 0x7F) << shift
            if not b & 0x80:
                return result
            shift += 7
            if shift > 70:
                raise FooterError("a number longer than 10 bytes")

    def zigzag(self) -> int:
        n = self.varint()
        return (n >> 1) ^ -(n & 1)

    def binary(self) -> bytes:
        n = self.varint()
        if n > len(self.data) - self.at:
            raise FooterError(f"a {n:,}-byte string past the footer's end")
        self.at += n
        return self.data[self.at - n : self.at]

    def skip(self, kind: int, depth: int) -> None:
        if depth > _MAX_DEPTH:
            raise FooterError(f"nested deeper than {_MAX_DEPTH} levels")
        if kind in (1, 2):  # a boolean held in the field header
            return
        if kind == 3:
            self.byte()
        elif kind in (4, 5, 6):
            self.varint()
        elif kind == 7:
            if len(self.data) - self.at < 8:
                raise FooterError("the footer ends inside a double")
            self.at += 8
        elif kind == 8:
            self.binary()
        elif kind in (9, 10):
            size, element = self.list_header()
            for _ in range(size):
                self.skip_element(element, depth + 1)
        elif kind == 11:
            size = self.varint()
            if size:
                types = self.byte()
                for _ in range(size):
                    self.skip_element(types >> 4, depth + 1)
                    self.skip_element(types & 0x0F, depth + 1)
        elif kind == 12:
            for _, field_kind in self.fields():
                self.skip(field_kind, depth + 1)
        else:
            raise FooterError(f"unknown Thrift type {kind}")

    def skip_element(self, kind: int, depth: int) -> None:
        if kind in (1, 2):  # a boolean in a list is a byte of its own
            self.byte()
        else:
            self.skip(kind, depth)

    def list_header(self) -> tuple[int, int]:
        head = self.byte()
        size = head >> 4
        if size == 15:
            size = self.varint()
        if size > len(self.data) - self.at:  # every element takes a byte at least
            raise FooterError(f"a list of {size:,} elements past the footer's end")
        return size, head & 0x0F

    def fields(self) -> Iterator[tuple[int, int]]:
        """Each (field id, type) of the structure here, up to its stop byte."""
        last = 0
        while True:
            head = self.byte()
            if head == 0:
                return
            delta, kind = head >> 4, head & 0x0F
            last = last + delta if delta else self.zigzag()
            yield last, kind


def key_values(content: bytes, shown: Mapping[bytes, bytes] | None = None) -> list[tuple[bytes, bytes | None]]:
    """Every key-value entry of a whole Parquet file's footer (`content`: the file's bytes), in the order written,
    a key written twice listed twice; FooterError when the footer cannot be read.

    `shown`: pyarrow's reading of the same footer (`FileMetaData.metadata`, one entry a key), taken as the list when
    each of its keys occurs once in the footer's bytes: every entry holds its key verbatim, so a key written twice
    occurs twice at least, and the footer is walked only then (a walk in Python of every column chunk's metadata
    costs a few milliseconds a file, a build's minutes at 50,000 files)."""
    if len(content) < 12 or content[-4:] != MAGIC:
        raise FooterError("no Parquet footer (the file does not end in PAR1)")
    length = int.from_bytes(content[-8:-4], "little")
    if length > len(content) - 12:
        raise FooterError(f"a footer of {length:,} bytes in a file of {len(content):,}")
    tail = content[-8 - length : -8]
    if shown is not None and all(tail.count(key) == 1 for key in shown):
        return list(shown.items())
    reader = _Reader(tail)
    entries: list[tuple[bytes, bytes | None]] = []
    for field_id, kind in reader.fields():
        if field_id != 5 or kind != 9:
            reader.skip(kind, 1)
            continue
        size, element = reader.list_header()
        if element != 12:
            raise FooterError("key_value_metadata is not a list of structures")
        for _ in range(size):
            key: bytes | None = None
            value: bytes | None = None
            for entry_field, entry_kind in reader.fields():
                if entry_field in (1, 2) and entry_kind == 8:
                    text = reader.binary()
                    key, value = (text, value) if entry_field == 1 else (key, text)
                else:
                    reader.skip(entry_kind, 2)
            if key is None:
                raise FooterError("a key-value entry without its key")
            entries.append((key, value))
    return entries
