// Render every chart placeholder with the Vega bundle served by this site (never a CDN).
// A placeholder is <div class="ff-chart" data-spec="ID" data-svg="URL"> plus <script type="application/json" id="ID">.
// A page opened from disk (file://) cannot fetch the CSV a run page's chart reads (browsers refuse it): such a chart
// shows its static SVG instead, and says why.
(function () {
  function readsFiles(spec) {
    var found = false;
    JSON.stringify(spec, function (key, value) {
      if (key === "url" && typeof value === "string") found = true;
      return value;
    });
    return found;
  }
  function fallBack(el) {
    var note = document.createElement("p");
    note.className = "ff-chart-note";
    note.textContent = "This page was opened from disk, where browsers refuse to load the run's CSV this chart " +
      "reads: below is its static SVG. Serve the site (python3 -m http.server -d site) for the interactive chart.";
    el.appendChild(note);
    if (el.dataset.svg) {
      var img = document.createElement("img");
      img.src = el.dataset.svg;
      img.alt = "the chart as a static SVG";
      el.appendChild(img);
    }
  }
  function render() {
    document.querySelectorAll("div.ff-chart[data-spec]").forEach(function (el) {
      if (el.dataset.rendered) return;
      var holder = document.getElementById(el.dataset.spec);
      if (!holder || typeof vegaEmbed !== "function") return;
      el.dataset.rendered = "1";
      var spec = JSON.parse(holder.textContent);
      if (window.location.protocol === "file:" && readsFiles(spec)) {
        fallBack(el);
        return;
      }
      vegaEmbed(el, spec, { actions: false, renderer: "svg" })
        .catch(function (err) { el.textContent = "Chart failed to render: " + err; });
    });
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", render);
  else render();
})();
