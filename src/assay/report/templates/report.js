  var cases = Array.prototype.slice.call(document.querySelectorAll("#case-list > details.case"));
  var text = document.getElementById("filter-text");
  var status = document.getElementById("filter-status");
  var count = document.getElementById("shown-count");
  function apply() {
    var words = text.value.toLowerCase().split(/\s+/).filter(Boolean);
    var wanted = status.value;
    var shown = 0;
    cases.forEach(function (item) {
      var q = item.getAttribute("data-q");
      var ok = (!wanted || item.getAttribute("data-status") === wanted) &&
        words.every(function (w) { return q.indexOf(w) !== -1; });
      item.hidden = !ok;
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
  window.addEventListener("hashchange", function () {
    var target = document.getElementById(location.hash.slice(1));
    if (target instanceof HTMLDetailsElement) { target.open = true; open(target); }
  });
