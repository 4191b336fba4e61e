// Sortable, filterable tables: every table inside <div class="ff-table"> gets a filter box and clickable
// headers. Numbers sort as numbers ("1,234", "15.4×", "45.1%", "–" for missing, which sorts last).
(function () {
  function key(text) {
    var t = text.trim();
    if (t === "" || t === "–") return null;
    var m = t.replace(/,/g, "").match(/^-?\d+(\.\d+)?([eE][-+]?\d+)?/);
    return m ? parseFloat(m[0]) : t.toLowerCase();
  }
  function compare(a, b) {
    if (a === null) return b === null ? 0 : 1;
    if (b === null) return -1;
    if (typeof a === typeof b) return a < b ? -1 : a > b ? 1 : 0;
    return typeof a === "number" ? -1 : 1;
  }
  function enhance(table) {
    if (table.dataset.enhanced) return;
    table.dataset.enhanced = "1";
    var body = table.tBodies[0];
    if (!body) return;
    var filter = document.createElement("input");
    filter.type = "search";
    filter.placeholder = "Filter rows…";
    filter.className = "ff-filter";
    filter.setAttribute("aria-label", "Filter table rows");
    filter.addEventListener("input", function () {
      var q = filter.value.toLowerCase();
      Array.prototype.forEach.call(body.rows, function (row) {
        row.hidden = q !== "" && row.textContent.toLowerCase().indexOf(q) === -1;
      });
    });
    var host = table.closest(".md-typeset__scrollwrap") || table;
    host.parentNode.insertBefore(filter, host);
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th, col) {
      th.classList.add("ff-sortable");
      th.setAttribute("role", "button");
      th.title = "Sort by " + th.textContent.trim();
      th.addEventListener("click", function () {
        var dir = th.dataset.dir === "asc" ? "desc" : "asc";
        Array.prototype.forEach.call(table.tHead.rows[0].cells, function (c) { delete c.dataset.dir; });
        th.dataset.dir = dir;
        var rows = Array.prototype.slice.call(body.rows);
        rows.sort(function (a, b) {
          var r = compare(key(a.cells[col].textContent), key(b.cells[col].textContent));
          return dir === "asc" ? r : -r;
        });
        rows.forEach(function (row) { body.appendChild(row); });
      });
    });
  }
  // every table of several columns carries each column's name on its cells, so that on a phone (the CSS's
  // table[data-cards]) a row reads as a card of "name value" lines instead of running past the screen's edge
  function label(table) {
    if (!table.tHead || !table.tHead.rows.length || table.dataset.cards !== undefined) return;
    var names = Array.prototype.map.call(table.tHead.rows[0].cells, function (th) { return th.textContent.trim(); });
    if (names.length < 3) return;
    Array.prototype.forEach.call(table.tBodies, function (body) {
      Array.prototype.forEach.call(body.rows, function (row) {
        Array.prototype.forEach.call(row.cells, function (td, col) { if (names[col]) td.dataset.label = names[col]; });
      });
    });
    table.dataset.cards = "";
  }
  function run() {
    document.querySelectorAll(".md-typeset table").forEach(label);
    document.querySelectorAll(".ff-table table").forEach(enhance);
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", run);
  else run();
})();
