"""Files that are not UTF-8: the encodings Windows tools and spreadsheets write, read as the text they are.

streamarms reads lines as UTF-8. Three kinds of file are not, and each was misread:

* **An 8-bit code page** -- Excel's "CSV (Comma delimited)" and most Windows programs write the system's ANSI
  code page (Windows-1252 in Western Europe and the Americas: ``M\\xfcller``), older Unix tools Latin-1. Every
  key with an accented letter was refused (``key_not_utf8``) and ``inspect`` showed ``'M\\udcfcller'``.
  ``--encoding cp1252`` (any Python codec whose line ends and ASCII are ASCII's: ``latin-1``, ``cp1251``,
  ``shift_jis``, ``gb18030``, ...) reads each line in it (:attr:`~streamarms.connectors.jsonl_lines.LineReader.
  encoding`): positions stay the file's bytes, so checkpoints, ``--follow`` and rotations work as for UTF-8.
  Which code page a file is in cannot be read from it; :func:`guess` names Windows-1252 when most bytes outside
  ASCII stand alone between ASCII letters (accented letters of a Western text; a multi-byte encoding's come in
  runs), and a run on such a file without ``--encoding`` warns at its start (:func:`advice`).
* **UTF-16 with its byte-order mark** -- Excel's "Unicode Text" (tab-separated) and PowerShell 5's ``>`` and
  ``Out-File``. Every line was read as bytes with NULs between them (the header's column names spelt ``D a t u m``).
  Its mark says what it is (:func:`marked`; UTF-32 with its mark too, rarer: .NET's ``Encoding.UTF32``), so it is
  read without a flag: :class:`Utf16Stream` (:class:`Utf32Stream`) gives its text as UTF-8 bytes to
  :class:`~streamarms.connectors.compressed_lines.CompressedLineReader`, which reads it as it reads a
  decompressed file (a checkpoint's position is in those bytes; a restart reads the file again up to it). Such a
  file is final (an export): ``--follow`` refuses it, naming the command that converts it.
* **UTF-16 without a mark** is refused naming the conversion (:func:`utf16_unmarked`): NUL bytes between ASCII
  letters are no text streamarms can read.

>>> check_encoding("Windows-1252"), check_encoding("latin_1")
('cp1252', 'iso8859-1')
>>> western = "Datum;Arbeiter\\n30.11.2026;M\\xfcller\\n".encode("cp1252")
>>> guess(western), guess(b"plain ascii"), guess("\\u00fc".encode())
('cp1252', None, None)
"""

from __future__ import annotations

import codecs

from streamarms.errors import ConfigError

from .made_stream import MadeStream
from .magics import BINARY

__all__ = ["check_encoding", "guess", "advice", "marked", "utf16_unmarked", "refuse_followed_marked",
           "Utf16Stream", "Utf32Stream", "UTF8"]

#: the encoding lines are read in unless ``--encoding`` says otherwise
UTF8 = "utf-8"
#: what an encoding must write as ASCII does for lines to be split and read as they are (line ends, JSON's
#: punctuation, the delimiters, digits and letters)
_ASCII = "\n\r\t ,;|{}[]\":=-_.0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
#: the byte-order marks of UTF-32 and of UTF-16 (little- and big-endian), UTF-32's first: its little-endian mark
#: starts as UTF-16's does
MARKS = ((codecs.BOM_UTF32_LE, "utf-32"), (codecs.BOM_UTF32_BE, "utf-32"), (codecs.BOM_UTF16_LE, "utf-16"),
         (codecs.BOM_UTF16_BE, "utf-16"))
#: what converts a file to UTF-8
_ICONV = "iconv -f {enc} -t UTF-8 {path} > {path}.utf8"


def check_encoding(name: str) -> str:
    """The codec's canonical name for ``--encoding name``, or a :class:`ConfigError`: no such codec, or one whose
    lines cannot be split as ASCII's (UTF-16 and UTF-32: their marked files are read without the flag)."""
    try:
        info = codecs.lookup(name)
    except LookupError:
        raise ConfigError(f"--encoding {name}: no such encoding (e.g. cp1252 for Windows' Western European text, "
                          "latin-1, cp1251, shift_jis, gb18030; Python's codec names)") from None
    plain = _ASCII.encode("ascii")
    try:  # (and its decoder keeps the bytes it cannot read, as UTF-8's does: surrogate escapes, refused downstream)
        ascii_alike = _ASCII.encode(info.name) == plain and \
            (plain + b"\x80\xff").decode(info.name, "surrogateescape").startswith(_ASCII)
    except (UnicodeError, LookupError, TypeError, ValueError):
        ascii_alike = False
    if not ascii_alike:
        raise ConfigError(f"--encoding {name}: its line ends and ASCII letters are not ASCII's bytes (or its decoder "
                          "cannot keep the bytes it does not read), so its lines cannot be read as they are written; "
                          "a UTF-16 file with its byte-order mark (Excel's "
                          "Unicode Text, PowerShell's Out-File) is read without --encoding; convert any other to "
                          f"UTF-8 first: {_ICONV.format(enc=info.name.upper(), path='FILE')}")
    return info.name


def guess(head: bytes) -> str | None:
    """The encoding of the text ``head`` (a file's first bytes) when it is not UTF-8 and reads as Windows-1252
    with most bytes outside ASCII alone between ASCII ones (module docstring); else ``None`` (UTF-8, or no
    guess). A UTF-8 sequence cut at the end of ``head`` is no evidence."""
    if _first_not_utf8(head) is None:
        return None
    runs = [len(r) for r in bytes(b if b >= 0x80 else 0x20 for b in head).split(b" ") if r]
    if not runs or 2 * runs.count(1) < sum(runs):  # (most of them alone: "M\xfcller"; "gr\xf6\xdfer" a pair)
        return None
    try:
        head.decode("cp1252")
    except UnicodeDecodeError:
        return None
    return "cp1252"


def advice(path: str, head: bytes) -> str | None:
    """The warning of a run on ``path`` (its first bytes ``head``) read as UTF-8 when it is not, naming the first
    line that is not and the ``--encoding`` that reads it; ``None`` when ``head`` is UTF-8."""
    at = _first_not_utf8(head)
    if at is None:
        return None
    line_no = head.count(b"\n", 0, at) + 1
    start = head.rfind(b"\n", 0, at) + 1
    end = head.find(b"\n", at)
    shown = head[start:end if end >= 0 else len(head)][:80]
    named = guess(head)
    how = (f"--encoding {named} reads it as Windows' Western European text (another code page: --encoding NAME, "
           "e.g. latin-1, cp1250, cp1251)" if named else
           "--encoding NAME reads it in its encoding (e.g. cp1252, latin-1, cp1251, shift_jis, gb18030)")
    return (f"{path} is not UTF-8 (line {line_no:,}: {shown!r}): its keys and texts with letters outside ASCII are "
            f"refused (key_not_utf8) or misread; {how}")


def _first_not_utf8(head: bytes) -> int | None:
    """Where ``head`` stops being UTF-8 (``None``: it is, but maybe for a sequence cut at its end: a file's first
    bytes end anywhere; or it is no text, :data:`.magics.BINARY`: its reader says what is wrong with it)."""
    if head.startswith(BINARY):
        return None
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as e:
        return None if e.start >= len(head) - 3 and e.reason == "unexpected end of data" else e.start
    return None


def marked(head: bytes) -> str | None:
    """``"utf-16"`` or ``"utf-32"`` when a file starting with ``head`` is text in it with its byte-order mark, else
    ``None``.

    >>> marked("\\ufeffa,b".encode("utf-16-le")), marked("\\ufeffa,b".encode("utf-32-le")), marked(b"a,b")
    ('utf-16', 'utf-32', None)
    """
    return next((codec for mark, codec in MARKS if head.startswith(mark)), None)


def utf16_unmarked(path: str, head: bytes) -> str | None:
    """What is wrong with a file whose first bytes ``head`` are UTF-16 text without a byte-order mark (ASCII
    letters with a NUL byte before or after each), with the command that converts it; else ``None``.

    >>> utf16_unmarked("x.csv", "a,b\\n1,2".encode("utf-16-le"))[:52]
    'x.csv is UTF-16 (little-endian) text without a byte-'
    >>> utf16_unmarked("x.csv", b"a,b\\n1,2"), utf16_unmarked("x.bin", bytes(16))
    (None, None)
    """
    pairs = [head[i:i + 2] for i in range(0, len(head) - 1, 2)]
    if len(pairs) < 4:
        return None
    for order, text_at in (("little-endian", 0), ("big-endian", 1)):
        if all(p[1 - text_at] == 0 and 0x09 <= p[text_at] < 0x7F for p in pairs):
            enc = "UTF-16LE" if text_at == 0 else "UTF-16BE"
            return (f"{path} is UTF-16 ({order}) text without a byte-order mark, which streamarms cannot read as it "
                    f"is: convert it to UTF-8 first ({_ICONV.format(enc=enc, path=path)}), or give it on standard "
                    f"input (iconv -f {enc} -t UTF-8 {path} | streamarms run --rewards-file - ...)")
    return None


def refuse_followed_marked(path: str, codec: str = "utf-16") -> ConfigError:
    """The error of a UTF-16 (``codec``: UTF-32) file given to ``--follow`` (or met among a followed file's
    rotations)."""
    enc = codec.upper()
    return ConfigError(f"{path} is {enc} text (its byte-order mark says so), and --follow reads files that a writer "
                       "appends lines to in UTF-8 or the --encoding given: replay it without --follow (read as the "
                       f"text it is), or convert it to UTF-8 first ({_ICONV.format(enc=enc, path=path)})")


class Utf16Stream(MadeStream):
    """The text of a UTF-16 file with its byte-order mark (``raw``, open for reading in binary) as UTF-8 bytes
    (:class:`~streamarms.connectors.made_stream.MadeStream`: read as a decompressed file is). A code unit that is no
    character (a lone surrogate) is read as U+FFFD.

    >>> import io
    >>> s = Utf16Stream(io.BytesIO("\\ufeffDatum\\tM\\u00fcller\\r\\n".encode("utf-16-le")))
    >>> s.read(100), s.tell()
    (b'Datum\\tM\\xc3\\xbcller\\r\\n', 15)
    >>> _ = s.seek(6); s.read(3)
    b'M\\xc3\\xbc'
    """

    #: the file's bytes decoded at a time
    BLOCK = 1 << 16
    #: the codec that reads the file (by its mark)
    CODEC = "utf-16"

    def _start(self) -> None:
        self._dec = codecs.getincrementaldecoder(self.CODEC)("replace")
        self._done = False

    def _more(self) -> bytes | None:
        if self._done:
            return None
        data = self._raw.read(self.BLOCK)
        self._done = not data
        return self._dec.decode(data, final=self._done).encode("utf-8")


class Utf32Stream(Utf16Stream):
    """The text of a UTF-32 file with its byte-order mark as UTF-8 bytes (:class:`Utf16Stream`).

    >>> import io
    >>> Utf32Stream(io.BytesIO("\\ufeffM\\u00fcller\\n".encode("utf-32-le"))).read(100)
    b'M\\xc3\\xbcller\\n'
    """

    CODEC = "utf-32"
