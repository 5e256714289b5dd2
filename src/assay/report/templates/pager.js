  /* The large report: one page of cases at a time, and a filter over every listed case. */
  var pages = Array.prototype.slice.call(document.querySelectorAll("#case-list > .page"));
  var listed = Array.prototype.slice.call(document.querySelectorAll("#case-list details.case, #more-cases li"));
  var more = document.getElementById("more-cases");
  var text = document.getElementById("filter-text");
  var status = document.getElementById("filter-status");
  var count = document.getElementById("shown-count");
  var pager = document.getElementById("pager");
  var label = document.getElementById("page-label");
  var current = 0;
  function show(n) {
    current = Math.max(0, Math.min(n, pages.length - 1));
    pages.forEach(function (page, i) { page.hidden = i !== current; });
    label.textContent = "page " + (current + 1) + " of " + pages.length;
  }
  function apply() {
    var words = text.value.toLowerCase().split(/\s+/).filter(Boolean);
    var wanted = status.value;
    var filtering = words.length > 0 || wanted !== "";
    var shown = 0;
    listed.forEach(function (item) {
      var q = item.getAttribute("data-q");
      var ok = !filtering || ((!wanted || item.getAttribute("data-status") === wanted) &&
        words.every(function (w) { return q.indexOf(w) !== -1; }));
      item.hidden = !ok;
      if (ok) { shown += 1; }
    });
    pager.hidden = filtering || pages.length < 2;
    if (filtering) {
      pages.forEach(function (page) { page.hidden = false; });
      if (more && shown) { more.open = true; }
      count.textContent = shown + " of " + listed.length + " cases found";
    } else {
      show(current);
      count.textContent = listed.length + " cases";
    }
  }
  function reveal(id) {
    var target = document.getElementById(id);
    if (!target) { return; }
    var page = target.closest(".page");
    if (page) { show(pages.indexOf(page)); }
    if (target.closest("#more-cases")) { more.open = true; }
    if (target instanceof HTMLDetailsElement) { target.open = true; open(target); }
    target.scrollIntoView();
  }
  document.getElementById("page-prev").addEventListener("click", function () { show(current - 1); });
  document.getElementById("page-next").addEventListener("click", function () { show(current + 1); });
  text.addEventListener("input", apply);
  status.addEventListener("change", apply);
  window.addEventListener("hashchange", function () { reveal(location.hash.slice(1)); });
  apply();
  if (location.hash) { reveal(location.hash.slice(1)); }
