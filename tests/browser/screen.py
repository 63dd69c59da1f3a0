"""What a person on a small screen would notice first: a page wider than the screen. Shared by
the browser tests (docs/web.md#on-a-phone)."""

from __future__ import annotations

from typing import Any

# Each element that reaches past the right edge of the screen while no box of its own scrolls
# it: what makes the page scroll sideways, named so that a failure says where to look.
STICKING_OUT = """() => {
  const width = innerWidth;
  const scrolls = el => { for (let up = el.parentElement; up; up = up.parentElement) {
      const style = getComputedStyle(up);
      if (up !== document.body && up !== document.documentElement
          && /auto|scroll|hidden/.test(style.overflowX)) return true; }
    return false; };
  const out = [];
  for (const el of document.body.querySelectorAll('*')) {
    const box = el.getBoundingClientRect();
    if (box.width && box.right > width + 0.5 && !scrolls(el)) {
      out.push(el.tagName.toLowerCase() + (el.id ? '#' + el.id : '')
        + (el.className && typeof el.className === 'string' ? '.' + el.className : '')
        + ' ' + Math.round(box.left) + '..' + Math.round(box.right) + 'px');
    }
  }
  const sheets = [...document.styleSheets].map(s => s.href + ':' + s.cssRules.length);
  return [document.documentElement.scrollWidth, width, out.slice(0, 12), sheets];
}"""


# A page is drawn once it has loaded and its run's log, if it shows one, has begun (the log's
# data-state is set when its stream starts: wrighty.js's followLog).
DRAWN = """() => { const log = document.getElementById('log');
  return document.readyState === 'complete' && (!log || log.hasAttribute('data-state')); }"""


def sideways(page: Any) -> str:
    """When the page, fully drawn, is no wider than the screen: "". Else what sticks out."""
    page.wait_for_function(DRAWN)
    wide, width, out, sheets = page.evaluate(STICKING_OUT)
    if wide <= width:
        return ""
    return f"{page.url}: {wide} px wide on a {width} px screen; sticking out: {out}; {sheets}"
