// assay view, the run page: a changed status or metric filter applies at once (the form works
// without this script too: its Filter button submits it).
"use strict";
(function () {
  const form = document.querySelector("form.run-filters");
  if (!form) { return; }
  form.querySelectorAll("select").forEach(function (select) {
    select.addEventListener("change", function () { form.submit(); });
  });
})();
