"""The one build store: every cache of the generator keeps its entries here, under one key discipline, one integrity
rule, one pruning rule and one lock (Hugo's file caches: named caches behind one `GetOrCreate`/`Prune`; asv: a result
whose benchmark changed is dropped, never patched).

- **Keys.** An entry is named by its kind and the sha256 of the code and libraries that make output
  (`fingerprint`: every module, template and installed library, never a hand-kept list) and the key its user gives
  (what else it is made from: a frame's row hashes, a file's sha256, a spec). A user never adds the fingerprint
  itself: the store does, for every entry, so no cache can forget it.
- **Two primitives.** A blob per output (`get`/`put`/`made`, or `file`/`put_file` for a file to link into the site);
  rows per result file (`read_rows`/`write_rows`: one Arrow table per kind and input shape, a row per file keyed by
  the file's sha256, or by a key that starts with it).
- **Integrity.** Each entry is two files: its bytes as they are (so a download part or a run page can be linked into
  the site, not copied) and a note naming the entry's kind and name, the bytes' size and sha256. An entry is read
  only when its note is whole and names it, its bytes are a regular file (never through a link, never a folder or a
  device: opened with O_NOFOLLOW, read up to the size noted) and they hash to the sha256 noted. Anything else is a
  miss: the entry is removed (one line on stderr says which and why) and made again, never published.
- **Pruning.** A site build keeps what it used (`prune`): every entry it read or wrote; every other entry of every
  kind, and a rows table's rows for files it did not ask for, are removed. `compare` and `validate` add entries and
  prune nothing.
- **One build at a time.** A build holds the store's lock (`locked`) from its first read to its last write; a second
  build on the same store waits for it and says so. Every write is made aside and renamed into place, so a reader
  that holds no lock (`compare`, `validate`) sees an entry whole or not at all.

The store lives in the build's cache folder (`runcache.folder_for`: `--work`'s `cache/`, or `FAIRFIGHT_SITE_CACHE`),
under `store/`; nothing is kept until a command calls `runcache.use(folder)`.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import io
import os
import re
import shutil
import stat
import sys
import threading
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

import polars as pl

import generator.store.fingerprint as fingerprint

FOLDER = "store"
"""The store's folder under a cache folder."""
FORMAT = "fairfight-store 1"
"""A note's first line: a note of another format is a miss."""
NOTE = ".note"
"""An entry's note is its bytes' file name with this suffix."""
NOTE_MAX = 4096
"""A note's size at most: a larger file is not a note (nor read whole)."""
_KIND = re.compile(r"[a-z][a-z0-9-]{0,40}")


class Store:
    """The entries under `root` (`<cache folder>/store`)."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self._used: dict[str, set[str]] = {}  # kind -> names of the entries this process read or wrote
        self._rows_used: dict[tuple[str, str], tuple[str, set[str]]] = {}  # (kind, name) -> key column, keys asked
        self._held = False  # whether this process holds the lock (`locked`)
        self._writing: list[tuple[threading.Thread, list[BaseException]]] = []  # `later`'s work, until `settle`

    # names ---------------------------------------------------------------------------------------------------------
    def name(self, kind: str, key: str) -> str:
        """The entry's file name: the sha256 of the fingerprint, its kind and `key`."""
        if not _KIND.fullmatch(kind):
            raise ValueError(f"store: {kind!r} is not a kind's name (lower-case letters, digits and dashes)")
        return hashlib.sha256(f"{fingerprint.fingerprint()}\0{kind}\0{key}".encode()).hexdigest()

    def _paths(self, kind: str, name: str) -> tuple[Path, Path]:
        data = self.root / kind / name
        return data, data.with_name(name + NOTE)

    def _use(self, kind: str, name: str) -> None:
        self._used.setdefault(kind, set()).add(name)

    # blobs ---------------------------------------------------------------------------------------------------------
    def get(self, kind: str, key: str) -> bytes | None:
        """The bytes kept for `key`, when whole (None: a miss, a damaged entry removed)."""
        name = self.name(kind, key)
        self._use(kind, name)
        return self._read(kind, name)

    def put(self, kind: str, key: str, data: bytes) -> None:
        """Keep `data` for `key` (nothing when the disk refuses: the output was made anyway)."""
        name = self.name(kind, key)
        self._use(kind, name)
        with contextlib.suppress(OSError):
            tmp = self._aside(kind, name)
            tmp.write_bytes(data)
            self._commit(kind, name, tmp, hashlib.sha256(data).hexdigest(), len(data))

    def made(self, kind: str, key: str, make: Callable[[], bytes]) -> bytes:
        """The bytes kept for `key`, else `make()`'s, kept (Hugo's GetOrCreate)."""
        kept = self.get(kind, key)
        if kept is not None:
            return kept
        data = make()
        self.put(kind, key, data)
        return data

    def file(self, kind: str, key: str) -> tuple[Path, str] | None:
        """The entry's file and its bytes' sha256, once checked (to be linked or copied, never written to)."""
        name = self.name(kind, key)
        self._use(kind, name)
        checked = self._check(kind, name, want_bytes=False)
        return None if checked is None else (self._paths(kind, name)[0], checked[0])

    def has(self, kind: str, key: str) -> bool:
        """Whether an entry for `key` is there (unchecked: `file` or `get` checks it), counted as used."""
        name = self.name(kind, key)
        self._use(kind, name)
        data, note = self._paths(kind, name)
        return data.is_file() and note.is_file()

    def put_file(self, kind: str, key: str, make: Callable[[Path], None]) -> tuple[Path, str]:
        """Keep the bytes `make(path)` writes at a path of the store's choosing; returns the entry's file and sha256
        (a disk that refuses raises: the caller needs the file)."""
        name = self.name(kind, key)
        self._use(kind, name)
        tmp = self._aside(kind, name)
        try:
            make(tmp)
            digest, size = _sha256(tmp)
            self._commit(kind, name, tmp, digest, size)
        finally:
            tmp.unlink(missing_ok=True)
        return self._paths(kind, name)[0], digest

    def later(self, work: Callable[[], None]) -> None:
        """Run `work` (writes of entries nothing in this process reads again) on a thread of its own while a build
        holds the lock: the store waits for it before it prunes or lets the lock go (`settle`). Run at once otherwise:
        a command that holds no lock may leave before a thread is done."""
        if not self._held:
            work()
            return
        failed: list[BaseException] = []

        def run() -> None:
            try:
                work()
            except BaseException as error:  # raised where the build waits for it (`settle`)
                failed.append(error)

        thread = threading.Thread(target=run, name="store-later")
        thread.start()
        self._writing.append((thread, failed))

    def settle(self) -> None:
        """Wait for the work `later` began; the first that failed raises here."""
        writing, self._writing = self._writing, []
        for thread, _ in writing:
            thread.join()
        for _, failed in writing:
            if failed:
                raise failed[0]

    def made_file(self, kind: str, key: str, make: Callable[[Path], None]) -> tuple[Path, str]:
        """`file`, else `put_file`."""
        return self.file(kind, key) or self.put_file(kind, key, make)

    # rows ----------------------------------------------------------------------------------------------------------
    def ask_rows(self, kind: str, tag: str, key_column: str, keys: Iterable[str]) -> None:
        """Count the rows `keys` (by `key_column`) of the table for inputs of shape `tag` as this build's: `prune`
        keeps those rows only."""
        name = self.name(kind, tag)
        self._use(kind, name)
        _column, asked = self._rows_used.setdefault((kind, name), (key_column, set()))
        asked.update(str(k) for k in keys)

    def read_rows(self, kind: str, tag: str, key_column: str) -> pl.DataFrame | None:
        """The rows kept for inputs of shape `tag`, keyed by `key_column` (None: none, or damaged)."""
        name = self.name(kind, tag)
        self._use(kind, name)
        data = self._read(kind, name)
        if data is None:
            return None
        try:
            frame = pl.read_ipc(io.BytesIO(data))
        except Exception:  # bytes whole but not a table (written by other code): a miss
            return None
        return frame if key_column in frame.columns else None

    def write_rows(self, kind: str, tag: str, frame: pl.DataFrame) -> None:
        """Replace the rows kept for inputs of shape `tag` with `frame`."""
        buffer = io.BytesIO()
        frame.write_ipc(buffer, compression="zstd")
        self.put(kind, tag, buffer.getvalue())

    # pruning -------------------------------------------------------------------------------------------------------
    def prune(self) -> int:
        """Remove every entry this process did not use, and the rows of a rows table that it did not ask for; returns
        how many files went. A build calls it once its site is published, holding the lock."""
        self.settle()
        for (kind, name), (column, asked) in self._rows_used.items():
            data = self._read(kind, name)
            if data is None:
                continue
            with contextlib.suppress(Exception):
                frame = pl.read_ipc(io.BytesIO(data))
                wanted = pl.Series(sorted(asked), dtype=pl.String).implode()
                kept = frame.filter(pl.col(column).cast(pl.String).is_in(wanted))
                if kept.height < frame.height:
                    buffer = io.BytesIO()
                    kept.write_ipc(buffer, compression="zstd")
                    new = buffer.getvalue()
                    tmp = self._aside(kind, name)
                    tmp.write_bytes(new)
                    self._commit(kind, name, tmp, hashlib.sha256(new).hexdigest(), len(new))
        removed = 0
        if not self.root.is_dir():
            return 0
        for entry in os.scandir(self.root):
            if entry.name.startswith(".lock"):
                continue
            if not entry.is_dir(follow_symlinks=False) or entry.name not in self._used:
                removed += _remove(Path(entry.path))
                continue
            used = self._used[entry.name]
            for item in os.scandir(entry.path):
                if item.name.removesuffix(NOTE) not in used:  # other entries, and what a killed build left aside
                    removed += _remove(Path(item.path))
        return removed

    # lock ----------------------------------------------------------------------------------------------------------
    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        """Hold the store for one build: a second build on it waits, saying for what."""
        self.root.mkdir(parents=True, exist_ok=True)
        with open(self.root / ".lock", "a+") as handle:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                handle.seek(0)
                holder = handle.read().strip() or "another process"
                print(
                    f"waiting for another build using the cache {self.root.parent} ({holder}) to finish",
                    file=sys.stderr,
                    flush=True,
                )
                fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                handle.seek(0)
                handle.truncate()
                handle.write(f"pid {os.getpid()}\n")
                handle.flush()
                self._held = True
                yield
            finally:
                try:
                    self.settle()
                finally:
                    self._held = False
                    fcntl.flock(handle, fcntl.LOCK_UN)

    # integrity -----------------------------------------------------------------------------------------------------
    def _read(self, kind: str, name: str) -> bytes | None:
        checked = self._check(kind, name, want_bytes=True)
        return None if checked is None else checked[1]

    def _check(self, kind: str, name: str, want_bytes: bool) -> tuple[str, bytes | None] | None:
        """(sha256, the bytes when wanted) of a whole entry; a damaged one is removed, with a line saying so."""
        data, note = self._paths(kind, name)
        if not os.path.lexists(data) and not os.path.lexists(note):
            return None  # not there: a plain miss
        why = None
        try:
            lines = _bounded(note, NOTE_MAX).decode().split("\n")
            if len(lines) < 4 or lines[0] != FORMAT or lines[1] != f"{kind}/{name}":
                why = "its note names another entry"
            else:
                digest, size = lines[2], int(lines[3])
                found, content = _hashed(data, size, want_bytes)
                if found != digest:
                    why = "its bytes are not those its note names"
                else:
                    return digest, content
        except (OSError, ValueError, UnicodeDecodeError) as error:
            why = _reason(error)
        print(f"cache entry {kind}/{name[:16]} is damaged ({why}): made again", file=sys.stderr)
        _remove(data)
        _remove(note)
        return None

    def _aside(self, kind: str, name: str) -> Path:
        folder = self.root / kind
        folder.mkdir(parents=True, exist_ok=True)
        return folder / f".{name}.{os.getpid()}.tmp"

    def _commit(self, kind: str, name: str, tmp: Path, digest: str, size: int) -> None:
        """Put the bytes written at `tmp` in place, then their note (no note while the bytes change: a reader in
        between has a miss, never bytes under another entry's note)."""
        data, note = self._paths(kind, name)
        _remove(note)
        if os.path.lexists(data) and not stat.S_ISREG(os.lstat(data).st_mode):
            _remove(data)  # a folder or a link where the bytes go: rename cannot replace a folder
        os.replace(tmp, data)
        aside = note.with_name(f".{note.name}.{os.getpid()}.tmp")
        aside.write_text(f"{FORMAT}\n{kind}/{name}\n{digest}\n{size}\n")
        os.replace(aside, note)


def _bounded(path: Path, limit: int) -> bytes:
    """At most `limit` bytes of the regular file at `path`, never through a link (O_NOFOLLOW), never a device or a
    folder; raises ValueError when it holds more."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise ValueError("not a regular file")
        if st.st_size > limit:
            raise ValueError("larger than noted")
        with os.fdopen(fd, "rb", closefd=False) as handle:
            return handle.read(limit + 1)
    finally:
        os.close(fd)


def _hashed(path: Path, size: int, keep: bool) -> tuple[str | None, bytes | None]:
    """The sha256 of the regular file at `path` if it holds exactly `size` bytes (else None), and its bytes when `keep`:
    read in blocks, never through a link, never a device or a folder."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    with os.fdopen(fd, "rb") as handle:
        st = os.fstat(handle.fileno())
        if not stat.S_ISREG(st.st_mode):
            raise ValueError("not a regular file")
        if st.st_size != size:
            return None, None
        digest, chunks, read = hashlib.sha256(), [], 0
        while read <= size and (block := handle.read(min(1 << 20, size + 1 - read))):
            digest.update(block)
            read += len(block)
            if keep:
                chunks.append(block)
        if read != size:
            return None, None
        return digest.hexdigest(), b"".join(chunks) if keep else None


def _sha256(path: Path) -> tuple[str, int]:
    digest, size = hashlib.sha256(), 0
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
            size += len(block)
    return digest.hexdigest(), size


def _reason(error: Exception) -> str:
    if isinstance(error, FileNotFoundError):
        return "half of it is missing"
    if isinstance(error, OSError) and error.errno is not None:
        return os.strerror(error.errno).lower()
    return str(error)


def _remove(path: Path) -> int:
    """Remove whatever is at `path` (a file, a link, a folder); 1 if something was."""
    try:
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path, ignore_errors=True)
        else:
            os.unlink(path)
        return 1
    except OSError:
        return 0


_active: Store | None = None


def use(folder: Path | None) -> Store | None:
    """Keep entries under `folder/store` from now on in this process (None: keep nothing); returns the store."""
    global _active
    _active = None if folder is None else Store(Path(folder) / FOLDER)
    return _active


def at(folder: Path) -> Store:
    """The store of the cache folder `folder`: the one in use when it is that folder's (so what is read or written
    through it counts as this build's), else one of its own."""
    if _active is not None and _active.root == Path(folder) / FOLDER:
        return _active
    return Store(Path(folder) / FOLDER)


def active() -> Store | None:
    """The store in use (None: nothing is kept, every output made afresh)."""
    return _active
