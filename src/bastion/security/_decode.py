r"""A scanning view of text: escapes decoded and look-alike characters folded.

Injected instructions hide from a scanner in ways a model still reads through: a JSON
string whose ``\n`` escapes start new lines, HTML entities (``&lt;system&gt;``), markdown
emphasis between letters, zero-width characters inside words, Unicode tag characters that
spell hidden ASCII, full-width or mathematical letters, and Cyrillic or Greek letters that
look Latin. :func:`scan_view` undoes all of these, lower-cased, for scanning only: the text
the model reads is never changed here.
"""

from __future__ import annotations

import html
import re
import unicodedata

__all__ = ["needs_decoding", "scan_view"]

# Zero-width and invisible formatting characters (removed), soft hyphen included.
_INVISIBLE = dict.fromkeys(
    [
        *(0x00AD, 0x034F, 0x061C, 0x115F, 0x1160, 0x17B4, 0x17B5, 0x180E, 0x3164, 0xFEFF),
        *range(0x200B, 0x2010),
        *range(0x202A, 0x202F),
        *range(0x2060, 0x2070),
    ],
)
# Unicode tag characters spell ASCII invisibly (U+E0041 is a hidden "A").
_TAGS: dict[int, int | None] = {cp: cp - 0xE0000 for cp in range(0xE0020, 0xE007F)}
_TAGS.update({0xE0001: None, 0xE007F: None})
# Letters of other scripts that look like Latin ones (the common confusables).
_CONFUSABLES = str.maketrans(
    "аеорсуххіїјѕԁɡһкӏмптвԛԝАВЕНІЈКМОРСТХУЅԌѴαβεικνορτυχΑΒΕΖΗΙΚΜΝΟΡΤΥΧℓı",
    "aeopcyxxiijsdghkimntbqwabehijkmopctxysgvabeiknoptuxabezhikmnoptyxli",
)
_MARKS = ("\\", "&", "*", "`", "__", "~~")
_JSON_ESCAPE = re.compile(r"\\(?:u([0-9a-fA-F]{4})|([nrtbf\"\\/]))")
_JSON_SIMPLE = {"n": "\n", "r": "\n", "t": " ", "b": "", "f": "", '"': '"', "\\": "\\", "/": "/"}
_MARKDOWN = re.compile(r"(?<=\w)[*`~]+(?=\w)|\*{1,3}|`+|~~|__")


def needs_decoding(text: str) -> bool:
    """True when :func:`scan_view` may differ from ``text.lower()`` in more than case."""
    return (
        not text.isascii()
        or "\\" in text
        or "&" in text
        or "*" in text
        or "`" in text
        or "__" in text
    )


def scan_view(text: str) -> str:
    """``text`` decoded for scanning (see the module doc), lower-cased."""
    if not needs_decoding(text):
        return text.lower()
    if "\\" in text:
        text = _JSON_ESCAPE.sub(_json_char, text)
    if "&" in text:
        text = html.unescape(text)
    if not text.isascii():
        text = text.translate(_INVISIBLE).translate(_TAGS)
        text = unicodedata.normalize("NFKC", text).translate(_CONFUSABLES)
    text = _MARKDOWN.sub("", text)
    return text.lower()


def _json_char(match: re.Match[str]) -> str:
    code, simple = match.group(1), match.group(2)
    if code is not None:
        return chr(int(code, 16))
    return _JSON_SIMPLE[simple]
