// assay view, the agree page: while an agree or align runs, show its step and reload the page
// once it has finished (the page then shows the cards and figures, or what went wrong).
"use strict";
(function () {
  const job = document.querySelector('[data-view="agree-job"]');
  if (!job) return;
  const step = job.querySelector('[data-view="agree-step"]');
  const poll = () => {
    fetch(job.dataset.status, {credentials: "same-origin"})
      .then((response) => response.json())
      .then((found) => {
        if (found.state === "running") {
          if (step) step.textContent = found.step;
          setTimeout(poll, 500);
        } else {
          window.location.reload();
        }
      })
      .catch(() => setTimeout(poll, 2000));
  };
  setTimeout(poll, 300);
})();
