// Render every chart placeholder with the Vega bundle served by this site (never a CDN).
// A placeholder is <div class="ff-chart" data-spec="ID" data-svg="URL"> plus <script type="application/json" id="ID">.
// A page opened from disk (file://) cannot fetch the rows a run page's chart reads (browsers refuse it): such a chart
// shows its static SVG instead, and says why.
// A placeholder marked data-lazy holds its static SVG and gets an "Interactive chart" button: the Vega bundle (about
// 900 KB, assets/js/vega.js beside this script) is fetched only when a reader presses one, so a board page weighs its
// text and images until then (generator/render/pages.py `Charts`).
(function () {
  var self = document.currentScript;
  var vegaSrc = self ? self.src.replace(/charts\.js(\?[^/]*)?$/, "vega.js") : "vega.js";
  var loading = null;
  function loadVega() {
    if (typeof vegaEmbed === "function") return Promise.resolve();
    if (!loading) {
      loading = new Promise(function (resolve, reject) {
        var script = document.createElement("script");
        script.src = vegaSrc;
        script.onload = function () { resolve(); };
        script.onerror = function () {
          loading = null;  // a later press tries again
          reject(new Error(vegaSrc + ": could not be loaded"));
        };
        document.head.appendChild(script);
      });
    }
    return loading;
  }
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
      img.alt = el.getAttribute("aria-label") || "the chart as a static SVG";
      el.appendChild(img);
    }
  }
  // A run's rows are shipped gzipped (`<run>.csv.gz`): fetched and unpacked here (DecompressionStream), then handed
  // to Vega as inline text in the spec's own format. A server that sends the file with Content-Encoding: gzip has
  // the browser unpack it already: only bytes that start with gzip's magic number are unpacked again.
  function inlined(spec) {
    var data = spec.data;
    if (!data || typeof data.url !== "string" || !/\.gz$/.test(data.url)) return Promise.resolve(spec);
    return fetch(data.url)
      .then(function (response) {
        if (!response.ok) throw new Error(data.url + ": HTTP " + response.status);
        return response.arrayBuffer();
      })
      .then(function (buffer) {
        var bytes = new Uint8Array(buffer);
        if (bytes.length < 2 || bytes[0] !== 0x1f || bytes[1] !== 0x8b) return new TextDecoder().decode(bytes);
        var stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
        return new Response(stream).text();
      })
      .then(function (text) {
        var out = Object.assign({}, spec);
        out.data = { values: text, format: data.format };
        return out;
      });
  }
  // A run page's samples chart names one spec that every run page shares (data-spec-src) and its own rows
  // (data-csv), which take the place of the spec's "@csv@".
  function shared(el) {
    return fetch(el.dataset.specSrc)
      .then(function (response) {
        if (!response.ok) throw new Error(el.dataset.specSrc + ": HTTP " + response.status);
        return response.text();
      })
      .then(function (text) { return JSON.parse(text.split("@csv@").join(el.dataset.csv)); });
  }
  // A run page's history chart names a spec that every run page shares, loaded by a script tag (window.FF_HISTORY,
  // so a page opened from disk draws it too), and its own data (data-values), the spec's datasets.
  function history(el) {
    var spec = JSON.parse(JSON.stringify((window.FF_HISTORY || {})[el.dataset.history] || null));
    var holder = document.getElementById(el.dataset.values);
    if (!spec || !holder) return Promise.reject(new Error("no history chart named " + el.dataset.history));
    spec.datasets = JSON.parse(holder.textContent);
    return Promise.resolve(spec);
  }
  // The interactive chart's svg names itself as the placeholder does (the spec's description, which Vega-Lite makes
  // the svg's aria-label): never Vega's generic "Vega visualization".
  function embed(el, spec) {
    var named = el.getAttribute("aria-label");
    if (named && !spec.description) spec = Object.assign({}, spec, { description: named });
    return vegaEmbed(el, spec, { actions: false, renderer: "svg" });
  }
  function draw(el) {
    var holder = el.dataset.spec ? document.getElementById(el.dataset.spec) : null;
    if (!holder && !el.dataset.specSrc) return;
    el.dataset.rendered = "1";
    if (window.location.protocol === "file:" && (!holder || readsFiles(JSON.parse(holder.textContent)))) {
      fallBack(el);
      return;
    }
    (holder ? Promise.resolve(JSON.parse(holder.textContent)) : shared(el))
      .then(inlined)
      .then(function (ready) { return embed(el, ready); })
      .then(function () {  // the interactive chart in the static one's place
        el.querySelectorAll("picture, img.ff-chart-static").forEach(function (img) { img.remove(); });
      })
      .catch(function (err) { el.textContent = "Chart failed to render: " + err; });
  }
  function offer(el) {
    var button = document.createElement("button");
    button.type = "button";
    button.className = "md-button ff-chart-open";
    button.textContent = "Interactive chart";
    button.setAttribute("aria-controls", el.id);
    button.addEventListener("click", function () {
      button.disabled = true;
      button.textContent = "Loading the interactive chart…";
      loadVega()
        .then(function () {
          button.remove();
          draw(el);
        })
        .catch(function (err) {
          button.disabled = false;
          button.textContent = "Interactive chart (" + err.message + "; press to try again)";
        });
    });
    el.parentNode.insertBefore(button, el.nextSibling);
  }
  function render() {
    document.querySelectorAll("div.ff-chart[data-lazy]").forEach(function (el) {
      if (el.dataset.offered) return;
      el.dataset.offered = "1";
      offer(el);
    });
    document.querySelectorAll("div.ff-chart[data-history]").forEach(function (el) {
      if (el.dataset.rendered || typeof vegaEmbed !== "function") return;
      el.dataset.rendered = "1";
      history(el)
        .then(function (ready) { return embed(el, ready); })
        .catch(function (err) { el.textContent = "Chart failed to render: " + err; });
    });
    document.querySelectorAll("div.ff-chart[data-spec], div.ff-chart[data-spec-src]").forEach(function (el) {
      if (el.dataset.rendered || el.dataset.lazy || typeof vegaEmbed !== "function") return;
      draw(el);
    });
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", render);
  else render();
})();
