"""Time in recall queries: explicit dates and relative expressions become a time window.

"in May 2023", "on 8 May 2023", "2023年5月", "last week", "上周", "去年五月", "yesterday", "3 days
ago" name a window; "when did …" / "什么时候" ask for a time without naming one. A window boosts
candidates whose event time lies inside it and lowers those outside (never below the floor of
relevance itself), so a dated question finds the dated turn first.

Relative expressions are anchored at the request time. When the user's newest memory the query
found is older than the start of the window so anchored (conversations kept from the past),
they are anchored at that newest memory's time instead: "last week" then means the week before
the newest thing the user's memory holds.
"""

from __future__ import annotations

import calendar
import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

MONTHS = {
    name: number
    for number, names in enumerate(
        (
            (),
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sep", "sept"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        )
    )
    for name in names
}
_ZH_NUMBERS = {"一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8,
               "九": 9, "十": 10, "十一": 11, "十二": 12}  # fmt: skip
_MONTH = (
    r"(january|february|march|april|may|june|july|august|september|october|november|december"
    r"|jan|feb|mar|apr|jun|jul|aug|sept|sep|oct|nov|dec)"
)
_ZH_MONTH = r"(十[一二]?|[一二三四五六七八九]|1[0-2]|0?[1-9])月"
_EN_NUMBER = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
              "seven": 7, "eight": 8, "nine": 9, "ten": 10, "few": 3, "couple of": 2}  # fmt: skip

# Explicit dates first (most specific wins), then relative expressions.
_DAY_MONTH_YEAR = re.compile(rf"\b(\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?{_MONTH},?\s+(\d{{4}})\b")
_MONTH_DAY_YEAR = re.compile(rf"\b{_MONTH}\s+(\d{{1,2}})(?:st|nd|rd|th)?,?\s+(\d{{4}})\b")
_MONTH_YEAR = re.compile(rf"\b{_MONTH},?\s+(?:of\s+)?(\d{{4}})\b")
_ISO_DATE = re.compile(r"\b(\d{4})-(\d{1,2})-(\d{1,2})\b")
_ZH_DATE = re.compile(rf"(\d{{4}})年(?:{_ZH_MONTH}(?:(\d{{1,2}})[日号])?)?")
_YEAR = re.compile(r"\b(?:in|during|since|of|year)\s+((?:19|20)\d{2})\b")
_ZH_RELATIVE_MONTH = re.compile(rf"(去年|今年|前年){_ZH_MONTH}")
_EN_AGO = re.compile(
    r"\b(a|an|one|two|three|four|five|six|seven|eight|nine|ten|few|couple of|\d+)\s+"
    r"(day|week|month|year)s?\s+ago\b"
)
_ZH_AGO = re.compile(r"(\d+|[一二两三四五六七八九十])\s*(天|周|个星期|星期|个月|年)前")
_RELATIVE = [
    # (pattern, unit, offset): the window is the whole unit `offset` units before the anchor's.
    (re.compile(r"\byesterday\b|昨天|昨日"), "day", 1),
    (re.compile(r"\bthe day before yesterday\b|前天"), "day", 2),
    (re.compile(r"\blast week\b|\bprevious week\b|上周|上个星期|上星期|上礼拜"), "week", 1),
    (re.compile(r"\bthis week\b|本周|这周|这个星期"), "week", 0),
    (re.compile(r"\blast month\b|\bprevious month\b|上个月|上月"), "month", 1),
    (re.compile(r"\bthis month\b|本月|这个月"), "month", 0),
    (re.compile(r"\blast year\b|\bprevious year\b|去年"), "year", 1),
    (re.compile(r"\bthis year\b|今年"), "year", 0),
    (re.compile(r"\blast weekend\b|上周末|上个周末"), "weekend", 1),
]  # fmt: skip
_ASKS_TIME = re.compile(
    r"\bwhen\b|\bwhat (?:date|day|time|year|month)\b|\bhow long ago\b|\bwhich (?:year|month|day)\b"
    r"|什么时候|哪天|哪一天|哪年|哪一年|几月|何时|多久以前",
)


@dataclass(frozen=True)
class TimeWindow:
    """[start, end) in UTC; `relative` windows depend on the anchor; `phrase` is what set it."""

    start: datetime
    end: datetime
    phrase: str
    relative: bool

    def contains(self, moment: datetime) -> bool:
        return self.start <= moment < self.end

    def as_dict(self) -> dict[str, str | bool]:
        return {
            "start": self.start.isoformat(),
            "end": self.end.isoformat(),
            "phrase": self.phrase,
            "relative": self.relative,
        }


@dataclass(frozen=True)
class TimeQuery:
    """What the query says about time: a window it names (or none) and whether it asks when."""

    window: TimeWindow | None
    asks_time: bool
    relative_phrase: str = ""  # set when the window must be re-anchored
    relative_unit: str = ""
    relative_offset: int = 0

    def as_dict(self) -> dict[str, object]:
        return {
            "window": self.window.as_dict() if self.window else None,
            "asks_time": self.asks_time,
        }


def parse_time_query(query: str, *, now: datetime) -> TimeQuery:
    """The time window `query` names, relative ones anchored at `now`."""
    text = query.lower()
    asks = bool(_ASKS_TIME.search(text))
    explicit = _explicit_window(text)
    if explicit is not None:
        return TimeQuery(window=explicit, asks_time=asks)
    match = _ZH_RELATIVE_MONTH.search(text)
    if match:
        years_back = {"今年": 0, "去年": 1, "前年": 2}[match.group(1)]
        month = _zh_month(match.group(2))
        if month:
            return TimeQuery(
                window=_month_window(now.year - years_back, month, match.group(0), relative=True),
                asks_time=asks,
                relative_phrase=match.group(0),
                relative_unit=f"month:{month}",
                relative_offset=years_back,
            )
    for unit, offset, phrase in _relative_terms(text):
        return TimeQuery(
            window=relative_window(unit, offset, anchor=now, phrase=phrase),
            asks_time=asks,
            relative_phrase=phrase,
            relative_unit=unit,
            relative_offset=offset,
        )
    return TimeQuery(window=None, asks_time=asks)


def reanchor(time_query: TimeQuery, *, newest: datetime | None) -> TimeQuery:
    """The documented rule: a relative window that starts after the user's newest memory is
    anchored at that memory's time instead of the request time."""
    window = time_query.window
    if window is None or not window.relative or newest is None or newest >= window.start:
        return time_query
    if time_query.relative_unit.startswith("month:"):
        month = int(time_query.relative_unit.split(":", 1)[1])
        moved = _month_window(
            newest.year - time_query.relative_offset, month, window.phrase, relative=True
        )
    else:
        unit, offset = time_query.relative_unit, time_query.relative_offset
        moved = relative_window(unit, offset, anchor=newest, phrase=window.phrase)
    return TimeQuery(
        window=moved,
        asks_time=time_query.asks_time,
        relative_phrase=time_query.relative_phrase,
        relative_unit=time_query.relative_unit,
        relative_offset=time_query.relative_offset,
    )


def relative_window(unit: str, offset: int, *, anchor: datetime, phrase: str) -> TimeWindow:
    """The whole day / week (Monday first) / month / year `offset` units before the anchor's;
    `ago:<unit>` is a window around the point `offset` units back; `weekend` the Saturday and
    Sunday before."""
    day = anchor.astimezone(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    if unit.startswith("ago:"):
        base = unit.split(":", 1)[1]
        span = {"day": 1, "week": 7, "month": 30, "year": 365}[base]
        centre = day - timedelta(days=span * offset)
        slack = timedelta(days=max(1, span // 2) if base != "day" else 1)
        return TimeWindow(centre - slack, centre + slack + timedelta(days=1), phrase, True)
    if unit == "day":
        start = day - timedelta(days=offset)
        return TimeWindow(start, start + timedelta(days=1), phrase, True)
    if unit == "week":
        start = day - timedelta(days=day.weekday() + 7 * offset)
        return TimeWindow(start, start + timedelta(days=7), phrase, True)
    if unit == "weekend":
        monday = day - timedelta(days=day.weekday())
        saturday = monday - timedelta(days=2 + 7 * (offset - 1))
        return TimeWindow(saturday, saturday + timedelta(days=2), phrase, True)
    if unit == "month":
        year, month = day.year, day.month - offset
        while month < 1:
            year, month = year - 1, month + 12
        return _month_window(year, month, phrase, relative=True)
    return TimeWindow(
        datetime(day.year - offset, 1, 1, tzinfo=UTC),
        datetime(day.year - offset + 1, 1, 1, tzinfo=UTC),
        phrase,
        True,
    )


def _relative_terms(text: str) -> list[tuple[str, int, str]]:
    found: list[tuple[int, str, int, str]] = []
    for match in _EN_AGO.finditer(text):
        raw = match.group(1)
        count = int(raw) if raw.isdigit() else _EN_NUMBER[raw]
        found.append((match.start(), f"ago:{match.group(2)}", count, match.group(0)))
    for match in _ZH_AGO.finditer(text):
        raw = match.group(1)
        count = int(raw) if raw.isdigit() else _ZH_NUMBERS.get(raw, 1)
        unit = {"天": "day", "周": "week", "个星期": "week", "星期": "week", "个月": "month"}.get(
            match.group(2), "year"
        )
        found.append((match.start(), f"ago:{unit}", count, match.group(0)))
    for pattern, unit, offset in _RELATIVE:
        for match in pattern.finditer(text):
            found.append((match.start(), unit, offset, match.group(0)))
    # "the day before yesterday" and "上周末" contain shorter expressions: the longest wins.
    found.sort(key=lambda f: (-len(f[3]), f[0]))
    return [(unit, offset, phrase) for _, unit, offset, phrase in found]


def _explicit_window(text: str) -> TimeWindow | None:
    for pattern, order in ((_DAY_MONTH_YEAR, "dmy"), (_MONTH_DAY_YEAR, "mdy")):
        match = pattern.search(text)
        if match:
            first, second, year = match.groups()
            day, month = (first, second) if order == "dmy" else (second, first)
            window = _day_window(int(year), MONTHS[month], int(day), match.group(0))
            if window:
                return window
    match = _ISO_DATE.search(text)
    if match:
        window = _day_window(int(match[1]), int(match[2]), int(match[3]), match.group(0))
        if window:
            return window
    match = _ZH_DATE.search(text)
    if match:
        year = int(match.group(1))
        month = _zh_month(match.group(2)) if match.group(2) else 0
        if month and match.group(3):
            window = _day_window(year, month, int(match.group(3)), match.group(0))
            if window:
                return window
        if month:
            return _month_window(year, month, match.group(0), relative=False)
        return _year_window(year, match.group(0))
    match = _MONTH_YEAR.search(text)
    if match:
        return _month_window(int(match.group(2)), MONTHS[match.group(1)], match.group(0), False)
    match = _YEAR.search(text)
    if match:
        return _year_window(int(match.group(1)), match.group(0))
    return None


def _zh_month(raw: str) -> int:
    month = int(raw) if raw.isdigit() else _ZH_NUMBERS.get(raw, 0)
    return month if 1 <= month <= 12 else 0


def _day_window(year: int, month: int, day: int, phrase: str) -> TimeWindow | None:
    if not 1 <= month <= 12 or not 1 <= day <= calendar.monthrange(year, month)[1]:
        return None
    start = datetime(year, month, day, tzinfo=UTC)
    return TimeWindow(start, start + timedelta(days=1), phrase, False)


def _month_window(year: int, month: int, phrase: str, relative: bool) -> TimeWindow:
    start = datetime(year, month, 1, tzinfo=UTC)
    end = datetime(year + (month == 12), month % 12 + 1, 1, tzinfo=UTC)
    return TimeWindow(start, end, phrase, relative)


def _year_window(year: int, phrase: str) -> TimeWindow:
    return TimeWindow(
        datetime(year, 1, 1, tzinfo=UTC), datetime(year + 1, 1, 1, tzinfo=UTC), phrase, False
    )
