(function () {
  "use strict";
  var cases = Array.prototype.slice.call(document.querySelectorAll("#case-list > details.case"));
  var text = document.getElementById("filter-text");
  var status = document.getElementById("filter-status");
  var count = document.getElementById("shown-count");
  function open(details) {
    var tpl = details.querySelector(":scope > template");
    if (tpl) { details.replaceChild(tpl.content, tpl); }
  }
  document.addEventListener("toggle", function (event) {
    var target = event.target;
    if (target instanceof HTMLDetailsElement && target.open) { open(target); }
  }, true);
  function apply() {
    var words = text.value.toLowerCase().split(/\s+/).filter(Boolean);
    var wanted = status.value;
    var shown = 0;
    cases.forEach(function (el) {
      var q = el.getAttribute("data-q");
      var ok = (!wanted || el.getAttribute("data-status") === wanted) &&
        words.every(function (w) { return q.indexOf(w) !== -1; });
      el.hidden = !ok;
      if (ok) { shown += 1; }
    });
    count.textContent = shown + " of " + cases.length + " cases";
  }
  text.addEventListener("input", apply);
  status.addEventListener("change", apply);
  if (location.hash) {
    var target = document.getElementById(location.hash.slice(1));
    if (target instanceof HTMLDetailsElement) { target.open = true; open(target); }
  }
})();
