"""Student ids, settled once at discovery: what every output (store, terminal, pages, CSV, exports) uses.

An id comes from a name a student or an LMS chose (a file's stem, a folder's
name), so it is judged before anything is stored under it:

- compared in a canonical form, Unicode NFKC then case folding, so `Alice`,
  `alice` and `ａｌｉｃｅ` (full-width) are one student;
- refused when it holds control or format characters (Unicode categories Cc,
  Cf, Zl, Zp: terminal escapes, bidi overrides, zero-width characters, line
  separators) or characters that show nothing (INVISIBLE: a Hangul filler, a
  combining grapheme joiner), mixes Latin, Cyrillic, Greek or Armenian letters (Cyrillic `а` in
  `аlice` displays as Latin `a`: the mixed-script rule browsers apply to
  domain names; a name written in one script stays fine), a path separator (`/`, `\\`), is `.` or `..`, is empty, or is
  longer than MAX_ID_CHARS; such a hand-in is not graded, and its feedback
  says why and what to rename;
- two hand-ins with one canonical id are both flagged, naming both files, and
  neither is graded: no result is merged into or overwrites another.

A refused id is stored in a readable form (`shown_id`): each refused character
becomes `_`, and a number is added where that form is taken, so every stored
id is unique, one line long and a valid folder name. Outputs still escape ids
for their own format (HTML, Markdown, CSV formulas): that is the format's rule,
not the id's.
"""
from __future__ import annotations

import difflib
import unicodedata

MAX_ID_CHARS = 128  # an LMS's "Lastname, Firstname_123456_assignsubmission_file_" fits
MAX_ID_BYTES = 200  # UTF-8, below the 255 bytes of one file name
REFUSED_CATEGORIES = {"Cc", "Cf", "Zl", "Zp", "Cs"}
# Characters that show nothing though they are letters or marks to Unicode (its Default_Ignorable_Code_Point
# ranges outside those categories: the Hangul fillers, the combining grapheme joiner, variation selectors), and the
# blank braille pattern: `bob` with one of them appended displays as `bob`.
INVISIBLE = ((0x034F, 0x034F), (0x115F, 0x1160), (0x17B4, 0x17B5), (0x180B, 0x180F), (0x2800, 0x2800),
             (0x3164, 0x3164), (0xFE00, 0xFE0F), (0xFFA0, 0xFFA0), (0xE0100, 0xE01EF))
SEPARATORS = ("/", "\\")
# Scripts whose letters can look the same (a/а/α, o/о/ο/օ): an id may use one of them, not several.
LOOKALIKE_SCRIPTS = ("LATIN", "CYRILLIC", "GREEK", "ARMENIAN", "CHEROKEE", "COPTIC")


def canonical(student: str) -> str:
    """The form ids are compared in: NFKC, case-folded, NFKC again (case folding can denormalise)."""
    return unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", student).casefold())


def roster_order(student: str) -> tuple[str, str]:
    """The key students are listed by everywhere: as a roster lists them, so "adam" comes before "Zoe"
    (exact text breaks a tie, so the order never depends on which came first)."""
    return canonical(student), student


def id_problem(student: str) -> str:
    """Why `student` cannot be a student id ("" when it can); the sentence names what to change."""
    if student.strip() in ("", ".", ".."):
        return f"the name {student!r} cannot be a student id; rename the file or folder after the student"
    bad = sorted({f"U+{ord(c):04X}" for c in student if _unseen(c)})
    if bad:
        return (f"its name holds characters that a terminal or a table would interpret or not show "
                f"({', '.join(bad[:5])}: control, format or invisible characters); rename the file or folder to the "
                "student's plain id")
    foreign = _foreign_letters(student)
    if foreign:
        shown = ", ".join(f"{c} U+{ord(c):04X} {_script(c).title()}" for c in sorted(foreign))
        return (f"its name mixes letters of scripts that look alike ({shown[:200]}), so it can look exactly like "
                "another student's id; rename the file or folder to the student's id in one script")
    if any(sep in student for sep in SEPARATORS):
        return ("its name holds a path separator (/ or \\), which no folder name may hold (an LMS builds such "
                "names from display names); rename the file or folder to the student's id without it")
    if len(student) > MAX_ID_CHARS or len(student.encode("utf-8", "replace")) > MAX_ID_BYTES:
        return (f"its name is {len(student)} characters long, over the {MAX_ID_CHARS} a student id may have; "
                "rename the file or folder to the student's id")
    if student != student.strip():
        return "its name starts or ends with a space; rename the file or folder to the student's id without it"
    return ""


def shown_id(student: str) -> str:
    """`student` as an id every output can hold: refused characters as `_`, NFKC, shortened, never . or ..

    Used for an id `id_problem` refuses, so its result can still be stored and listed.
    """
    normal = unicodedata.normalize("NFKC", student)
    foreign = _foreign_letters(normal)
    text = "".join("_" if _unseen(c) or c in SEPARATORS or c in foreign else c for c in normal).strip()
    text = text[:MAX_ID_CHARS].encode("utf-8", "replace")[:MAX_ID_BYTES].decode("utf-8", "ignore")
    return text if text.strip(".") else "unnamed"


def unique(student: str, taken: set[str]) -> str:
    """`student`, or `student-2`, `-3`... whichever canonical form is not in `taken` (which it is added to)."""
    name, n = student, 1
    while canonical(name) in taken:
        n += 1
        name = f"{student}-{n}"
    taken.add(canonical(name))
    return name


def _unseen(character: str) -> bool:
    """Whether a character would be interpreted by a terminal or table, or shows nothing (REFUSED_CATEGORIES,
    INVISIBLE)."""
    point = ord(character)
    return (unicodedata.category(character) in REFUSED_CATEGORIES
            or any(first <= point <= last for first, last in INVISIBLE))


def _script(letter: str) -> str:
    """The script of a letter, as the first word of its Unicode name (LATIN, CYRILLIC, GREEK, CJK, ...)."""
    return unicodedata.name(letter, "").split(" ")[0]


def _foreign_letters(student: str) -> set[str]:
    """The letters of `student` from a lookalike script other than the one most of its lookalike letters use."""
    letters = [c for c in student if c.isalpha() and _script(c) in LOOKALIKE_SCRIPTS]
    scripts = [_script(c) for c in letters]
    if len(set(scripts)) < 2:
        return set()
    main = max(LOOKALIKE_SCRIPTS, key=scripts.count)
    return {c for c in letters if _script(c) != main}


def as_stored(students: list[str], stored: set[str]) -> dict[str, str]:
    """student -> the stored id it is, for each of `students` that differs from one of `stored` only in what
    `canonical` forgives (case, width): `S0001.py` handed in where `s0001` was graded before is still s0001,
    with s0001's inputs, not a second student beside it in every export."""
    by_form = {canonical(student): student for student in stored}
    return {student: by_form[canonical(student)] for student in students
            if by_form.get(canonical(student), student) != student}


def near_ids(student: str, stored: set[str], most: int = 3) -> list[str]:
    """Stored ids a TA may have meant by `student`, which is none of them: those holding it (`smithjohn` for a
    Canvas download's `smithjohn_4101`), else those spelled alike; at most `most`, sorted."""
    wanted = canonical(student)
    holding = sorted(s for s in stored if wanted and wanted in canonical(s))
    if holding:
        return holding[:most]
    by_form = {canonical(s): s for s in stored}
    return sorted(by_form[s] for s in difflib.get_close_matches(wanted, list(by_form), n=most, cutoff=0.75))
