"""Filters the pages share: durations a person reads, factor values with units, and links to detail pages."""

from __future__ import annotations

import re
from datetime import timedelta

from django import template
from django.utils.html import conditional_escape
from django.utils.safestring import SafeString, mark_safe

from monitor.charts import format_factor, format_number

register = template.Library()


@register.filter
def duration(value) -> str:
    """2 d 3 h, 1 h 58 min, 4 min 12 s, 240 ms: never microseconds, two units at most."""
    if value is None or value == "":
        return "—"
    exact = value.total_seconds() if isinstance(value, timedelta) else float(value)
    if abs(exact) < 1:  # a cycle's run time: milliseconds, not "0 s"
        return f"{'−' if exact < 0 else ''}{round(abs(exact) * 1000)} ms"
    seconds = int(exact)
    sign = "−" if seconds < 0 else ""
    seconds = abs(seconds)
    days, rest = divmod(seconds, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    if days:
        return f"{sign}{days} d {hours} h"
    if hours:
        return f"{sign}{hours} h {minutes} min"
    if minutes:
        return f"{sign}{minutes} min {secs} s" if minutes < 10 and secs else f"{sign}{minutes} min"
    return f"{sign}{secs} s"


HEX_ID = re.compile(r"[0-9a-f]{20,}")


@register.filter
def short_id(value) -> SafeString:
    """A WMCore element's 32-hex id, cut to 12 characters with the whole of it in a title (it has no separator to
    wrap at, and a column of them pushed a table past the page); any other name as it is, wrappable."""
    text = "" if value is None else str(value)
    if HEX_ID.fullmatch(text):
        return mark_safe(f'<span title="{conditional_escape(text)}">{conditional_escape(text[:12])}…</span>')
    return wrappable(text)


@register.filter
def kilobytes(value) -> str:
    """A size the pilot reports in kB (maxRSS, maxPSS) as a person reads it: 2.1 GB, 850 MB."""
    if value is None or value == "":
        return "—"
    kb = float(value)
    if kb >= 1024 * 1024:
        return f"{kb / 1024 / 1024:,.1f} GB"
    if kb >= 1024:
        return f"{kb / 1024:,.0f} MB"
    return f"{kb:,.0f} kB"


@register.filter
def grid_duration(value) -> str:
    """A wait of the grid (a throttled period, a retry, a timeout's time left, how long a task has been in its
    status) in grid time, the clock PanDA's figures are in: the real duration × the demo's grid speed, labelled
    "of grid time" when the grid runs faster than the clock (brokerage.grid_clock). One clock in every sentence:
    "throttled 120 min" and "releases in 1 min 22 s" side by side were the grid's and the wall clock's."""
    from brokerage.grid_clock import grid_speed

    if value is None or value == "":
        return "—"
    speed = grid_speed()
    real = value if isinstance(value, timedelta) else timedelta(seconds=float(value))
    text = duration(real * speed)
    return text if speed == 1 else f"{text} of grid time"


@register.simple_tag
def grid_label() -> str:
    """ " of grid time" after a figure of PanDA's in minutes, where the grid runs faster than the clock."""
    from brokerage.grid_clock import grid_speed

    return "" if grid_speed() == 1 else " of grid time"


@register.simple_tag
def grid_clock_note() -> str:
    """The footer's sentence on the grid's clock, empty where the grid runs at the clock's pace (production)."""
    from brokerage.grid_clock import grid_speed

    speed = grid_speed()
    if speed == 1:
        return ""
    return (
        f"Durations marked “of grid time” are on the simulated grid's clock, which runs {speed:g}× faster than"
        " this one: PanDA's figures (a 120-minute throttle, a 60-minute retry) keep their values."
    )


@register.simple_tag
def job_counts_note(counted_at) -> str:
    """The sentence beside active jobs read from the periodic count (selectors.queues.jobs_by_queue): how long
    ago they were counted and how often, on the grid's clock; empty when the page counted them itself."""
    from django.conf import settings
    from django.utils import timezone

    if counted_at is None:
        return ""
    age = max(timezone.now() - counted_at, timedelta(0))
    every = timedelta(seconds=settings.JOB_COUNTS_INTERVAL_SECONDS)
    return f"Active jobs as counted {grid_duration(age)} ago (they are counted every {grid_duration(every)})."


@register.filter
def factor_meaning(name) -> str:
    """What a weight factor of the trace is (brokerage.engine.core.reasons.FACTOR_MEANINGS), for its title."""
    from brokerage.engine.core.reasons import factor_meaning as meaning

    return meaning(str(name))


@register.filter
def factor(value, name: str = "") -> str:
    """A trace value with its unit where the name says one (spaceFreeGB → 4,795,286.6 GB)."""
    return format_factor(str(name), value)


@register.filter
def number(value) -> str:
    return format_number(value)


_BREAK_AFTER = re.compile(r"(&#?\w+;)|([._/:,=#-])")


@register.filter(needs_autoescape=True)
def wrappable(value, autoescape: bool = True) -> SafeString:
    """A long name (task, dataset, file, gdpconfig key) that may wrap after its separators (. _ / : , = # -)
    instead of stretching its table past the page or breaking mid-word: escaped, with <wbr> after each."""
    text = str(conditional_escape(value) if autoescape else value)
    # entities from the escaping (&amp; &#x27; …) are kept whole
    return mark_safe(_BREAK_AFTER.sub(lambda m: m.group(1) or m.group(2) + "<wbr>", text))
