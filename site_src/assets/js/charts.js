// Render every chart placeholder with the Vega bundle served by this site (never a CDN).
// A placeholder is <div class="ff-chart" data-spec="ID"> plus <script type="application/json" id="ID">.
(function () {
  function render() {
    document.querySelectorAll("div.ff-chart[data-spec]").forEach(function (el) {
      if (el.dataset.rendered) return;
      var holder = document.getElementById(el.dataset.spec);
      if (!holder || typeof vegaEmbed !== "function") return;
      el.dataset.rendered = "1";
      vegaEmbed(el, JSON.parse(holder.textContent), { actions: false, renderer: "svg" })
        .catch(function (err) { el.textContent = "Chart failed to render: " + err; });
    });
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", render);
  else render();
})();
