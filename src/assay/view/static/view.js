// assay view: the one script every page loads (the CSP allows no other). Each page's features
// attach to elements that carry a data-view attribute; a page without them runs nothing.
"use strict";
(function () {
  const csrf = () => document.querySelector('meta[name="csrf-token"]').content;
  window.assayView = {
    csrf: csrf,
    post: (url, data) => fetch(url, {
      method: "POST",
      headers: {"Content-Type": "application/json", "X-CSRF-Token": csrf()},
      body: JSON.stringify(data),
      credentials: "same-origin",
    }),
  };
})();
