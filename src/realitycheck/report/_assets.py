"""The inline style sheet and script of the HTML pages (report and leaderboard).

Both are written into the page itself: nothing is fetched, so a page opens
offline and can be dropped on a static site as it is. The script only reads
and reorders what the page already holds: it sorts a table when its header is
clicked (numbers by value, ``n/a`` last), adds a filter box to long tables,
opens a folded section when a link points into it, and folds the table of
contents on narrow screens. It never builds markup from text.
"""

from __future__ import annotations

__all__ = ["CSS", "SCRIPT"]

CSS = """
:root { --line: #d0d7de; --muted: #57606a; --head: #f6f8fa; }
* { box-sizing: border-box; }
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: #1f2328;
  margin: 0; line-height: 1.45; }
.layout { display: grid; grid-template-columns: 15rem minmax(0, 1fr); gap: 1.5rem;
  max-width: 1500px; margin: 0 auto; padding: 0 1rem; }
.single { max-width: 1200px; margin: 0 auto; padding: 0 1rem; }
main { min-width: 0; padding-bottom: 4rem; }
main p, main li, main summary, main figcaption, main h2, main h3, main .foot {
  overflow-wrap: anywhere; }
nav.toc { position: sticky; top: 0; align-self: start; max-height: 100vh; overflow-y: auto;
  font-size: .82rem; padding: 1rem 0; }
nav.toc ul { list-style: none; padding-left: .8rem; margin: .2rem 0; }
nav.toc > details > ul { padding-left: 0; }
nav.toc a { color: #0969da; text-decoration: none; }
nav.toc summary { font-weight: 600; cursor: pointer; }
@media (max-width: 900px) {
  .layout { display: block; }
  nav.toc { position: static; max-height: none; padding: .5rem 0 0; }
}
h1 { font-size: 1.6rem; margin: 1rem 0 .3rem; }
h2 { font-size: 1.3rem; border-bottom: 2px solid var(--line); padding-bottom: .2rem;
  margin-top: 2.2rem; }
h3 { font-size: 1.08rem; margin-top: 1.5rem; }
h4 { font-size: 1rem; }
a.top { font-size: .75rem; font-weight: normal; float: right; margin-top: .5rem;
  color: var(--muted); }
.findings { background: #f6f8fa; border: 1px solid var(--line); border-radius: 6px;
  padding: .2rem 1rem .6rem; }
.table-wrap { overflow: auto; max-height: 28rem; margin: 0 0 .8rem; width: fit-content;
  max-width: 100%; border: 1px solid var(--line); }
table { border-collapse: separate; border-spacing: 0; font-size: .8rem; }
p.caption { color: var(--muted); font-size: .78rem; margin: .6rem 0 .2rem; max-width: 60rem; }
th, td { border-right: 1px solid var(--line); border-bottom: 1px solid var(--line);
  padding: .2rem .45rem; vertical-align: top; unicode-bidi: isolate; }
th { background: var(--head); text-align: left; position: sticky; top: 0; z-index: 2; }
th:first-child, td:first-child { position: sticky; left: 0; z-index: 1; background: #fff; }
th:first-child { z-index: 3; background: var(--head); }
th.sortable { cursor: pointer; }
th[aria-sort="ascending"]::after { content: " \\25B2"; font-size: .7em; }
th[aria-sort="descending"]::after { content: " \\25BC"; font-size: .7em; }
td.r { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
td.long { min-width: 14rem; max-width: 32rem; overflow-wrap: anywhere; }
tbody tr:nth-child(even) td { background: #fafbfc; }
input.filter { display: block; font-size: .78rem; margin: .2rem 0 .3rem; padding: .15rem .3rem;
  width: 14rem; }
.foot { font-size: .75rem; color: var(--muted); margin: -.5rem 0 .8rem; }
details.fold { margin: .3rem 0 1rem; }
details.fold > summary { cursor: pointer; color: #0969da; font-size: .9rem; }
@media (max-width: 640px) {
  .table-wrap.cards { width: 100%; max-height: none; overflow: visible; border: none; }
  table.cards, table.cards tbody, table.cards tr { display: block; width: 100%; }
  table.cards thead { position: absolute; width: 1px; height: 1px; overflow: hidden;
    clip: rect(0 0 0 0); }
  table.cards tr { border: 1px solid var(--line); border-radius: 6px; margin: 0 0 .5rem;
    padding: .25rem .5rem; }
  table.cards td, table.cards td:first-child { display: grid; position: static; border: none;
    grid-template-columns: minmax(6.5rem, 45%) 1fr; gap: .5rem; padding: .12rem 0;
    text-align: left; white-space: normal; overflow-wrap: anywhere; min-width: 0;
    max-width: none; background: transparent; }
  table.cards td::before { content: attr(data-label); color: var(--muted); font-weight: 600; }
  table.cards td:first-child { font-weight: 600; }
  table.cards tbody tr:nth-child(even) td { background: transparent; }
}
figure { display: inline-block; margin: .5rem 1.5rem .5rem 0; vertical-align: top;
  max-width: 100%; }
figure img { max-width: 100%; height: auto; }
figcaption { font-size: .75rem; color: var(--muted); }
"""

SCRIPT = """
(function () {
  "use strict";
  var NUM = /^\\s*(?:<\\s*)?([-+]?[\\d,]*\\.?\\d+(?:e[-+]?\\d+)?)/i;
  function key(cell) {
    var text = cell.textContent.trim();
    var m = NUM.exec(text);
    return m ? parseFloat(m[1].replace(/,/g, "")) : (text === "" || text === "n/a" ? null : text);
  }
  function sortBy(table, th, col) {
    var body = table.tBodies[0];
    var rows = Array.prototype.slice.call(body.rows);
    var dir = th.getAttribute("aria-sort") === "ascending" ? -1 : 1;
    var keyed = rows.map(function (r, i) { return [key(r.cells[col] || r), i, r]; });
    keyed.sort(function (a, b) {
      var x = a[0], y = b[0];
      if (x === null || y === null) { return x === y ? a[1] - b[1] : (x === null ? 1 : -1); }
      if (typeof x !== typeof y) { return (typeof x === "number" ? -1 : 1) * dir; }
      var c = typeof x === "number" ? x - y : x.localeCompare(y);
      return c === 0 ? a[1] - b[1] : c * dir;
    });
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (h) {
      h.removeAttribute("aria-sort");
    });
    th.setAttribute("aria-sort", dir === 1 ? "ascending" : "descending");
    keyed.forEach(function (k) { body.appendChild(k[2]); });
  }
  function filter(table, input) {
    var q = input.value.toLowerCase();
    Array.prototype.forEach.call(table.tBodies[0].rows, function (r) {
      r.hidden = q !== "" && r.textContent.toLowerCase().indexOf(q) < 0;
    });
  }
  document.querySelectorAll("table.data").forEach(function (table) {
    if (!table.tHead || !table.tBodies.length) { return; }
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th, col) {
      th.classList.add("sortable");
      th.title = "Sort";
      th.addEventListener("click", function () { sortBy(table, th, col); });
    });
    if (table.tBodies[0].rows.length > 8) {
      var input = document.createElement("input");
      input.type = "search";
      input.className = "filter";
      input.placeholder = "Filter rows";
      input.setAttribute("aria-label", "Filter rows");
      input.addEventListener("input", function () { filter(table, input); });
      var wrap = table.parentNode;
      wrap.parentNode.insertBefore(input, wrap);
    }
  });
  function reveal() {
    var id = decodeURIComponent(location.hash.slice(1));
    var node = id ? document.getElementById(id) : null;
    for (var n = node; n; n = n.parentElement) {
      if (n.tagName === "DETAILS") { n.open = true; }
    }
    if (node) { node.scrollIntoView(); }
  }
  window.addEventListener("hashchange", reveal);
  if (location.hash) { reveal(); }
  var toc = document.querySelector("nav.toc > details");
  if (toc && window.innerWidth <= 900) { toc.open = false; }
})();
"""
