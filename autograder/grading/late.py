"""Deadlines and late work: when each submission was handed in, and what course.yaml's late rule takes off.

One source of truth for each fact: the results store keeps the raw score
(the sum of the checks' points) and the submission time; the penalty is
never stored. It is derived here, from the rule in course.yaml, whenever
grades are written out (`export`, `report`, Gradescope's results.json), so a
changed rule or a new extension takes effect at the next export, without
regrading.

A submission's time comes from, in this order of trust: nbgrader's
`timestamp.txt` (written by `nbgrader collect`), Gradescope's
`submission_metadata.json` (`created_at`), Blackboard's attempt time in its
download's file names (which carry no zone: stored as written, and read at each
export on the assignment's `time_zone`, else in the offset of the student's due
time; the exports write them in UTC), or the file's modification time,
which copying, unzipping or a checkout changes, and which is therefore
flagged as unreliable wherever it decides a penalty.
"""
from __future__ import annotations

import dataclasses
import datetime
import math
import os
import re
import zoneinfo
from dataclasses import dataclass, field
from pathlib import Path

from autograder.grading.handin import read_small
from autograder.grading.ids import canonical

NBGRADER_TIMESTAMP = "nbgrader timestamp"
GRADESCOPE_METADATA = "gradescope metadata"
FILE_TIME = "file time (unreliable)"
# Stored as Blackboard wrote it, without a zone, and read by `stated` on the clock course.yaml names at each export,
# so a `time_zone` set after grading needs no regrading. The text is what results store, so it stays as the first
# ones stored it; the exports write `stated`'s source instead, which names the zone the time was read in.
LMS_LOCAL_TIME = "Blackboard attempt time (in the due time's offset)"
FILE_TIME_INSTEAD = "; the file's modification time was used as the submission time instead"  # ends such a note
TIMESTAMP_FILE = "timestamp.txt"  # nbgrader's, beside the notebooks in submitted/<student>/<assignment>/
UTC = datetime.UTC
DAY_SECONDS = 86400.0
EXAMPLE_TIME = "2026-11-20T23:59:00-05:00"
TOTAL_DIGITS = 6  # the decimals a penalty and a total are rounded to


class TimeError(ValueError):
    """A time that cannot be read; the message says what was expected."""


@dataclass(frozen=True)
class LateRule:
    """An assignment's due time, its late rule and its extensions (course.yaml `due`, `late`, `extensions`).

    due: None when the assignment declares none; then nothing is ever late.
    penalty_per_day: the fraction of the raw total removed for each started
    day after the due time plus the grace. max_days_late: past that many days
    after the due time plus the grace, the total is 0 (None: no limit).
    extensions: student -> their own due time, replacing `due` for them.
    time_zone: the institution's zone (IANA, "America/New_York"), where the LMS's times carry none (Blackboard's
        attempt times); "": they are read in the offset of the due time they are held to.
    """

    due: datetime.datetime | None = None
    penalty_per_day: float = 0.0
    grace_minutes: float = 0.0
    max_days_late: float | None = None
    extensions: dict[str, datetime.datetime] = field(default_factory=dict)
    time_zone: str = ""

    def extension(self, student: str) -> datetime.datetime | None:
        """The student's own due time, if they have one; its id matched as ids compare (case aside)."""
        wanted = canonical(student)
        return next((due for name, due in self.extensions.items() if canonical(name) == wanted), None)

    def deadline(self, student: str) -> datetime.datetime | None:
        """The student's due time: their extension, else the assignment's."""
        extension = self.extension(student)
        return self.due if extension is None else extension

    def unknown_students(self, students: set[str]) -> list[str]:
        """Extensions naming students who have no result: usually a mistyped id."""
        known = {canonical(student) for student in students}
        return sorted(name for name in self.extensions if canonical(name) not in known)


def with_extension(rule: LateRule, student: str, due: datetime.datetime | None) -> LateRule:
    """`rule` with `due` as the student's extension where it is later than their deadline (an extension granted
    elsewhere, in Gradescope's page, say): a student is never held to the earlier of two extensions."""
    deadline = rule.deadline(student)
    if due is None or deadline is None or due <= deadline:
        return rule
    others = {name: when for name, when in rule.extensions.items() if canonical(name) != canonical(student)}
    return dataclasses.replace(rule, extensions={**others, student: due})


@dataclass(frozen=True)
class Late:
    """What the late rule does to one submission's raw total.

    late_by_hours: hours after the student's deadline (0 when on time; None
    when there is no due time or no submission time). days: started days
    after the deadline plus the grace. reason: one sentence for the
    student and the TA ("" when nothing applies).
    """

    raw: float
    penalty: float = 0.0
    late_by_hours: float | None = None
    days: int = 0
    reason: str = ""
    deadline: str = ""
    unreliable_time: bool = False
    submitted_at: str = ""  # the hand-in time as the exports write it: ISO 8601 in UTC where its zone is known
    submitted_at_source: str = ""  # where it came from, naming the zone a Blackboard time was read in
    clock_change: str = ""  # why a Blackboard time may be an hour off: a time the clock change doubled or skipped

    @property
    def total(self) -> float:
        return round(self.raw - self.penalty, TOTAL_DIGITS)

    def flags(self) -> list[str]:
        """Short labels for a TA's flagged list."""
        found = []
        if self.penalty or self.days:  # past the grace: "late (−0)" where there were no points to take
            found.append(f"late (−{_points(self.penalty)})")
        elif self.late_by_hours:
            found.append("late, within the grace")
        if self.unreliable_time and self.late_by_hours is not None:
            found.append("time from the file")
        if self.clock_change:
            found.append("time on a clock change")
        return found


# The late rule's flags (`Late.flags`), as every list of flags explains them beside results.FLAG_MEANINGS.
LATE_MEANINGS = {
    "late (−N)": "handed in after the due time and its grace: N points were taken off (the reason is in the "
                 "feedback; −0 where the total was 0 already)",
    "late, within the grace": "handed in after the due time but within the grace period: no penalty",
    "time from the file": "the hand-in time is the file's modification time, which the student can change",
    "time on a clock change": "Blackboard's attempt time (it carries no zone) falls in the hour the clocks went back, "
                              "which happens twice, or in the hour they skipped, which does not exist: the reason "
                              "says how it was read; check the attempt's time in Blackboard, and where it is an "
                              "hour from that reading and the penalty would differ, correct the total in the LMS",
}


@dataclass(frozen=True)
class Stated:
    """A stored hand-in time as read now. moment: the instant (None where unknown); text: as the exports write it,
    ISO 8601 in UTC where the zone is known; source: where it came from, naming the zone a Blackboard time was read
    in; clock_change: why it may be an hour off ("" almost always)."""

    moment: datetime.datetime | None
    text: str
    source: str
    clock_change: str = ""


def stated(rule: LateRule | None, student: str, submitted_at: str, source: str) -> Stated:
    """`submitted_at` (as stored: ISO 8601, a Blackboard time without a zone) read as an instant.

    Raises ValueError where it is not a time (not one this package wrote).
    """
    if not submitted_at:
        return Stated(None, "", source)
    moment = datetime.datetime.fromisoformat(submitted_at)
    if moment.tzinfo is not None or source != LMS_LOCAL_TIME:
        moment = moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)
        return Stated(moment, iso(moment), source)
    if rule is not None and rule.time_zone:  # the institution's clock, its summer time included
        zone = zoneinfo.ZoneInfo(rule.time_zone)
        read = moment.replace(tzinfo=zone)
        return Stated(read, iso(read), f"Blackboard attempt time (in {rule.time_zone})", _clock_change(moment, zone))
    deadline = rule.deadline(student) if rule else None
    if deadline is None:  # no clock to read it on: written as Blackboard wrote it
        return Stated(None, submitted_at, "Blackboard attempt time (its zone unknown: set `time_zone` in course.yaml)")
    read = moment.replace(tzinfo=deadline.tzinfo)
    return Stated(read, iso(read), f"Blackboard attempt time (in the due time's offset, UTC{read.isoformat()[-6:]})")


def _clock_change(moment: datetime.datetime, zone: zoneinfo.ZoneInfo) -> str:
    """What was assumed of a wall-clock time that the night's clock change doubled or skipped; "" for any other."""
    first, second = moment.replace(tzinfo=zone, fold=0), moment.replace(tzinfo=zone, fold=1)
    if first.utcoffset() == second.utcoffset():
        return ""
    wall = moment.isoformat(sep=" ")
    if first.astimezone(UTC).astimezone(zone).replace(tzinfo=None) == moment:
        return (f"Blackboard's attempt time {wall} happened twice in {zone.key} (the clocks went back that night): "
                f"it was read as the earlier, {iso(first)}, not {iso(second)}")
    return (f"Blackboard's attempt time {wall} does not exist in {zone.key} (the clocks skipped that hour): it was "
            f"read as {iso(first)}; Blackboard's clock may not be in the assignment's time_zone")


def assess(rule: LateRule | None, student: str, raw: float, submitted_at: str, source: str) -> Late:
    """The late rule applied to one raw total handed in at `submitted_at` (ISO 8601; "" if unknown)."""
    deadline = rule.deadline(student) if rule else None
    try:
        handed, readable = stated(rule, student, submitted_at, source), True
    except ValueError:  # not a time this package wrote: treated as unknown rather than stopping an export
        handed, readable = Stated(None, submitted_at, source), False
    shown = {"submitted_at": handed.text, "submitted_at_source": handed.source, "clock_change": handed.clock_change}
    if deadline is None:
        return Late(raw, **shown)
    shown_deadline = deadline.isoformat()
    if not readable:
        return Late(raw, deadline=shown_deadline, **shown, reason=f"the stored submission time {submitted_at[:40]!r} "
                                                                   "is not a time, so no late rule was applied; grade "
                                                                   "it again with --force")
    if handed.moment is None:
        return Late(raw, deadline=shown_deadline, **shown, reason="the submission time is unknown (no hand-in file to "
                                                                  "take it from, or a result stored before times were "
                                                                  "recorded), so no late rule was applied; if there is "
                                                                  "a hand-in, grade it again with --force")
    unreliable = source == FILE_TIME
    seconds = (handed.moment - deadline).total_seconds()
    # Rounded up to the hundredth: a hand-in 17 s late is late by 0.01 hours, not by 0.
    late = Late(raw, late_by_hours=math.ceil(max(0.0, seconds) / 36) / 100, deadline=shown_deadline,
                unreliable_time=unreliable, **shown)
    if seconds <= 0:  # on time; a clock change's doubt is said all the same, since the TA must check it
        return _replace(late, reason=handed.clock_change and f"handed in on time ({handed.clock_change})")
    after_grace = seconds - rule.grace_minutes * 60
    when = f"handed in {_duration(seconds)} after the due time {shown_deadline}" + (
        f" ({handed.clock_change})" if handed.clock_change else
        " (by the file's modification time, which is unreliable)" if unreliable else "")
    if after_grace <= 0:
        return _replace(late, reason=f"{when}, within the {rule.grace_minutes:g}-minute grace: no penalty")
    days = math.ceil(after_grace / DAY_SECONDS)
    if rule.max_days_late is not None and after_grace > rule.max_days_late * DAY_SECONDS:
        return _replace(late, days=days, penalty=round(raw, TOTAL_DIGITS),
                        reason=f"{when}: more than {rule.max_days_late:g} days late, so the total is 0")
    fraction = min(1.0, days * rule.penalty_per_day)
    penalty = round(raw * fraction, TOTAL_DIGITS)
    return _replace(late, days=days, penalty=penalty,
                    reason=f"{when}: {days} started day{'s' if days != 1 else ''} late × "
                           f"{100 * rule.penalty_per_day:g}% = {100 * fraction:g}% of {_points(raw)} points, "
                           f"−{_points(penalty)}")


def _replace(late: Late, **changes) -> Late:
    return Late(**{**late.__dict__, **changes})


def _duration(seconds: float) -> str:
    hours = seconds / 3600
    if seconds < 120:
        return f"{seconds:.0f} seconds"
    if hours < 2:
        return f"{seconds / 60:.0f} minutes"
    return f"{hours:.1f} hours" if hours < 48 else f"{hours / 24:.1f} days"


def _points(value: float) -> str:
    return f"{value:.6f}".rstrip("0").rstrip(".")


# ---------------------------------------------------------------- reading times


def parse_due(value) -> datetime.datetime:
    """A due time from course.yaml: ISO 8601 text with its offset, or the aware datetime YAML makes of one.

    Raises TimeError for anything else: a time without an offset would mean
    a different instant on every grading machine.
    """
    if isinstance(value, datetime.datetime):
        moment = value
    elif isinstance(value, str):
        try:
            moment = datetime.datetime.fromisoformat(value.strip())
        except ValueError as error:  # not the form, or no such day ("day is out of range for month")
            raise TimeError(f"expected an ISO 8601 time with its offset, e.g. {EXAMPLE_TIME}; got {value!r} "
                            f"({error})") from None
    else:
        raise TimeError(f"expected an ISO 8601 time with its offset, e.g. {EXAMPLE_TIME}; got {value!r}")
    if moment.tzinfo is None or moment.utcoffset() is None:
        raise TimeError(f"{value} has no offset; add one (e.g. {EXAMPLE_TIME}, or Z for UTC) so every grading "
                        "machine reads the same instant")
    return moment


# The zone abbreviations nbgrader writes (its timestamp_format ends in %Z) where its `timezone` is a place with
# summer time, or west of UTC, and that the zone database does not know as names: America/New_York writes EDT in
# summer, America/Los_Angeles PST or PDT. Each names one offset wherever it is used; CST, IST, BST and AST name
# several (US Central or China, India or Ireland), so they are not read.
ABBREVIATED_OFFSETS = {"EDT": -4, "CDT": -5, "MDT": -6, "PDT": -7, "PST": -8, "AKDT": -8, "AKST": -9, "HDT": -9,
                       "NDT": -2.5, "NST": -3.5, "ADT": -3, "WEST": 1, "CEST": 2, "EEST": 3, "MSK": 3, "SAST": 2,
                       "JST": 9, "KST": 9, "HKT": 8, "SGT": 8, "AWST": 8, "ACST": 9.5, "ACDT": 10.5, "AEST": 10,
                       "AEDT": 11, "NZST": 12, "NZDT": 13}
_NBGRADER_FORM = re.compile(r"^(\d{4}-\d\d-\d\d[ T]\d\d:\d\d(?::\d\d(?:\.\d+)?)?)(?:\s+(\S+))?$")


def parse_timestamp(text: str) -> datetime.datetime:
    """A submission time as nbgrader writes it, in UTC.

    nbgrader's exchange writes "2026-11-30 20:46:00.123456 UTC" (its
    timestamp_format, "%Y-%m-%d %H:%M:%S.%f %Z"); ISO 8601, a numeric offset
    ("+0100") or a zone name ("Europe/Berlin") in place of UTC are read too,
    and a time without a zone is UTC, as nbgrader's parse_utc takes it.
    """
    text = text.replace("\ufeff", "").strip()  # a byte order mark, as an editor on Windows writes one
    try:
        moment = datetime.datetime.fromisoformat(text)
    except ValueError:
        moment = _nbgrader_form(text)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC)


def _nbgrader_form(text: str) -> datetime.datetime:
    match = _NBGRADER_FORM.match(text)
    if not match:
        raise TimeError(f"{text[:60]!r} is not a time (nbgrader writes e.g. '2026-11-30 20:46:00.123456 UTC')")
    try:
        moment = datetime.datetime.fromisoformat(match.group(1))
    except ValueError as error:  # the right form, but no such time: month 13, 25:00, February 30
        raise TimeError(f"{text[:60]!r} is no real time ({error}); write the time the hand-in came in "
                        "(nbgrader writes e.g. '2026-11-30 20:46:00.123456 UTC')") from None
    zone = match.group(2)
    if zone is None or zone.upper() in ("UTC", "GMT", "Z"):
        return moment.replace(tzinfo=UTC)
    if re.fullmatch(r"[+-]\d\d:?\d\d", zone):
        return datetime.datetime.fromisoformat(match.group(1) + zone[:3] + ":" + zone[-2:])
    if zone.upper() in ABBREVIATED_OFFSETS:
        hours = ABBREVIATED_OFFSETS[zone.upper()]
        return moment.replace(tzinfo=datetime.timezone(datetime.timedelta(hours=hours), zone.upper()))
    try:
        return moment.replace(tzinfo=zoneinfo.ZoneInfo(zone))
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        raise TimeError(f"{zone!r} in {text[:60]!r} is not a time zone this grader can read (an abbreviation that "
                        "names several zones, as CST, IST or BST do, is not read); write the time in UTC or with its "
                        "offset (2026-11-30 20:46:00 +0100)") from None


def iso(moment: datetime.datetime) -> str:
    """How the store keeps a time: ISO 8601 in UTC, to the microsecond nbgrader keeps."""
    return moment.astimezone(UTC).isoformat()


def attempt_time(attempt: str) -> str:
    """Blackboard's attempt time, YYYY-MM-DD-HH-MM-SS, as ISO 8601 without a zone (LMS_LOCAL_TIME); "" if none."""
    parts = attempt.split("-")
    try:
        return datetime.datetime(*map(int, parts)).isoformat() if len(parts) == 6 else ""
    except ValueError:  # not a date (month 13)
        return ""


def file_time(path: Path) -> str:
    """The file's modification time (ISO 8601, UTC): the last resort, and unreliable."""
    try:
        return iso(datetime.datetime.fromtimestamp(os.stat(path).st_mtime, UTC))
    except OSError:
        return ""


def submission_time(folder: Path, path: Path) -> tuple[str, str, str]:
    """(time, source, note) for the file `path` handed in in `folder`.

    nbgrader's timestamp.txt in `folder` when there is one; else the file's
    modification time. note: why a timestamp.txt present was not used.
    """
    stamp = Path(folder) / TIMESTAMP_FILE
    if os.path.lexists(stamp):
        # Read by the hand-in rule (grading.handin): a link or a FIFO named timestamp.txt is refused, not followed.
        text = read_small(stamp, 200)
        try:
            if text is None:
                raise TimeError("it is not a regular file")
            return iso(parse_timestamp(text.decode(errors="replace"))), NBGRADER_TIMESTAMP, ""
        except (TimeError, OverflowError) as error:
            return file_time(path), FILE_TIME, f"{TIMESTAMP_FILE} could not be read ({error}){FILE_TIME_INSTEAD}"
    return file_time(path), FILE_TIME, ""


def assess_result(rule: LateRule | None, result) -> Late:
    """`assess` for a stored SubmissionResult: its raw score, student and submission time."""
    return assess(rule, result.student, result.score, result.submitted_at, result.submitted_at_source)
