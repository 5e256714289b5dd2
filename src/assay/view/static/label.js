// assay view: labelling. Attaches to every [data-view="label-form"] (a label per judged unit:
// a button per choice and a one-line reason, posted as JSON with the CSRF header), to the queue
// ([data-view="label-queue"]: keys y / n / s, digits, r) and to the export buttons
// ([data-view="label-export"]). Nothing here is inline (the CSP allows only this file).
"use strict";
(function () {
  const forms = Array.from(document.querySelectorAll('[data-view="label-form"]'));
  const queue = document.querySelector('[data-view="label-queue"]');

  function save(form, label) {
    const status = form.querySelector(".label-status");
    const unit = JSON.parse(form.dataset.unit);
    unit.label = label;
    unit.reason = form.querySelector('input[name="reason"]').value;
    status.textContent = "saving…";
    status.classList.remove("failed");
    return window.assayView.post("/api/labels", unit).then((response) =>
      response.json().then((body) => {
        if (!response.ok) {
          throw new Error(body.error || response.statusText);
        }
        form.querySelectorAll("button[data-label]").forEach((button) => {
          button.setAttribute("aria-pressed", button.dataset.label === body.label ? "true" : "false");
        });
        form.dataset.saved = body.label;
        status.textContent = "saved";
        return body;
      })
    ).catch((error) => {
      status.textContent = "not saved: " + error.message;
      status.classList.add("failed");
      throw error;
    });
  }

  function chosen(form) {
    const pressed = form.querySelector('button[aria-pressed="true"]');
    return pressed ? pressed.dataset.label : null;
  }

  function afterSave(form) {
    // On the queue, a saved label moves on to the next unit.
    if (queue && queue.contains(form)) {
      window.location.reload();
    }
  }

  forms.forEach((form) => {
    form.addEventListener("submit", (event) => event.preventDefault());
    form.querySelectorAll("button[data-label]").forEach((button) => {
      button.addEventListener("click", () => {
        save(form, button.dataset.label).then(() => afterSave(form), () => {});
      });
    });
    const reason = form.querySelector('input[name="reason"]');
    reason.addEventListener("keydown", (event) => {
      if (event.key === "Enter") {
        event.preventDefault();
        const label = chosen(form);
        if (label) {
          save(form, label).then(() => reason.blur(), () => {});
        } else {
          reason.blur();
        }
      } else if (event.key === "Escape") {
        reason.blur();
      }
    });
  });

  function typing(target) {
    return target instanceof HTMLElement &&
      (target.isContentEditable || ["INPUT", "TEXTAREA", "SELECT"].includes(target.tagName));
  }

  if (queue) {
    const form = queue.querySelector('[data-view="label-form"]');
    document.addEventListener("keydown", (event) => {
      if (!form || typing(event.target) || event.ctrlKey || event.metaKey || event.altKey) {
        return;
      }
      const buttons = Array.from(form.querySelectorAll("button[data-label]"));
      let button = null;
      if (event.key === "s") {
        event.preventDefault();
        const url = new URL(window.location.href);
        url.searchParams.append("skip", queue.dataset.key);
        window.location.assign(url.toString());
        return;
      } else if (event.key === "r") {
        event.preventDefault();
        form.querySelector('input[name="reason"]').focus();
        return;
      } else if (buttons.length === 2 && event.key === "y") {
        button = buttons[0];
      } else if (buttons.length === 2 && event.key === "n") {
        button = buttons[1];
      } else if (/^[1-9]$/.test(event.key)) {
        button = buttons[Number(event.key) - 1] || null;
      }
      if (button) {
        event.preventDefault();
        button.click();
      }
    });
  }

  document.querySelectorAll('[data-view="label-export"]').forEach((button) => {
    button.addEventListener("click", () => {
      const status = button.parentElement.querySelector(".export-status");
      const url = "/runs/" + encodeURIComponent(button.dataset.run) + "/labels/export";
      window.assayView.post(url, {}).then((response) => response.json().then((body) => {
        status.textContent = response.ok ? "written to " + body.path : "not written: " + body.error;
      }));
    });
  });
})();
