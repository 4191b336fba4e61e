// The theme's bundle fetches the whole search index (over 300 KB on a full site) as every page loads, before anyone
// searches. This script, loaded ahead of the bundle (site_src/overrides/main.html), holds that one fetch back until a
// reader reaches for search: focus on the search box, a press on its button, or the theme's keys for it (/, s, f).
// The theme sends a query to its search worker only once the index is in, so a query typed meanwhile is answered
// when it arrives.
(function () {
  var real = window.fetch;
  var release;
  var wanted = new Promise(function (resolve) { release = resolve; });
  function isIndex(input) {
    var url = typeof input === "string" ? input : input && input.url ? input.url : String(input);
    return /\/search\/search_index\.json([?#]|$)/.test(url);
  }
  document.addEventListener("focusin", function (e) {
    if (e.target && e.target.matches && e.target.matches("input.md-search__input")) release();
  });
  document.addEventListener("click", function (e) {
    if (e.target && e.target.closest && e.target.closest("label[for='__search'], .md-search")) release();
  }, true);
  document.addEventListener("keydown", function (e) {
    if (e.key === "/" || e.key === "s" || e.key === "f" || e.key === "S" || e.key === "F") release();
  }, true);
  // the theme requests it by XMLHttpRequest (for its progress bar); a fetch is held back alike
  var open = XMLHttpRequest.prototype.open;
  var send = XMLHttpRequest.prototype.send;
  XMLHttpRequest.prototype.open = function (method, url) {
    this.ffSearchIndex = isIndex(url);
    return open.apply(this, arguments);
  };
  XMLHttpRequest.prototype.send = function () {
    var request = this;
    var args = arguments;
    if (!request.ffSearchIndex) return send.apply(request, args);
    wanted.then(function () { send.apply(request, args); });
  };
  window.fetch = function (input, init) {
    if (isIndex(input)) return wanted.then(function () { return real.call(window, input, init); });
    return real.apply(this, arguments);
  };
})();
