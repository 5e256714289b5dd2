// assay view: a run in progress, live. On a page with <section id="live" data-run="ID"
// data-status="running">, it follows /runs/ID/events (server-sent events): says "N of M cases
// finished" in that section, adds a row to <table id="cases"> for each case that finishes (one
// already listed, by its data-case="set/eval_id/run", is skipped), and says when the run has
// ended, with a link to reload the page. Every piece of data goes in as text (textContent),
// never as HTML.
"use strict";
(function () {
  const section = document.getElementById("live");
  if (!section || section.dataset.status !== "running" || !window.EventSource) {
    return;
  }
  const run = section.dataset.run;
  const table = document.getElementById("cases");
  const MAX_ROWS = 1000; // rows added to a page at most: past them, the counts go on
  const listed = new Set();
  let added = 0;

  const line = (() => {
    const found = section.querySelector(".live-status");
    if (found) {
      return found;
    }
    const made = document.createElement("p");
    made.className = "live-status";
    made.setAttribute("role", "status");
    made.setAttribute("aria-live", "polite");
    section.appendChild(made);
    return made;
  })();

  if (table) {
    for (const row of table.querySelectorAll("tr[data-case]")) {
      listed.add(row.dataset.case);
    }
  }

  function plural(count, word) {
    return count + " " + word + (count === 1 ? "" : "s");
  }

  function countsText(counts) {
    const finished = counts.finished || 0;
    const of = counts.total === null || counts.total === undefined
      ? plural(finished, "case") + " finished"
      : finished + " of " + plural(counts.total, "case") + " finished";
    const parts = [];
    if (counts.passed) parts.push(counts.passed + " passed");
    if (counts.failed) parts.push(counts.failed + " failed");
    if (counts.not_evaluated) parts.push(counts.not_evaluated + " not evaluated");
    return parts.length ? of + " (" + parts.join(", ") + ")" : of;
  }

  function say(text, status) {
    line.textContent = text;
    line.className = "live-status" + (status ? " " + status : "");
  }

  // The metric columns of the table's head, by name, in order: th[data-metric], else the
  // grid's metric headings (th.grid-metric), each titled with its metric's name.
  function metricColumns() {
    if (!table || !table.tHead) {
      return [];
    }
    const named = table.tHead.querySelectorAll("th[data-metric]");
    if (named.length) {
      return Array.from(named, (th) => th.dataset.metric);
    }
    return Array.from(table.tHead.querySelectorAll("th.grid-metric"), (th) => th.title);
  }

  function cell(tag, className, text) {
    const made = document.createElement(tag);
    if (className) made.className = className;
    if (text !== undefined) made.textContent = text;
    return made;
  }

  function row(data) {
    const tr = document.createElement("tr");
    tr.dataset.case = data.key;
    tr.dataset.status = data.class;
    tr.className = "grid-row live-row " + data.class;
    const head = cell("th", "grid-case");
    head.scope = "row";
    const link = cell("a", "", data.eval_id);
    link.href = data.href;
    head.appendChild(link);
    if (data.run > 1) head.append(" ", cell("span", "muted", "run " + data.run));
    head.append(" ", cell("span", "muted", data.set));
    tr.appendChild(head);
    const columns = metricColumns();
    if (columns.length) {
      const byName = new Map(data.metrics.map((m) => [m.name, m]));
      for (const name of columns) {
        const metric = byName.get(name);
        const td = cell("td", "cell " + (metric ? metric.class : "n-a"), metric ? metric.text : "-");
        if (metric) td.title = name + ": " + metric.status;
        tr.appendChild(td);
      }
    } else {
      tr.appendChild(cell("td", "live-case-status " + data.class, data.status.replace("_", " ").toLowerCase()));
      const metrics = cell("td", "live-metrics");
      data.metrics.forEach((metric, index) => {
        if (index) metrics.append(", ");
        metrics.append(metric.name + " ");
        metrics.appendChild(cell("span", metric.class, metric.text));
      });
      tr.appendChild(metrics);
    }
    return tr;
  }

  function addCase(data) {
    if (!table || listed.has(data.key) || added >= MAX_ROWS) {
      return;
    }
    listed.add(data.key);
    added += 1;
    const body = table.tBodies.length ? table.tBodies[0] : table.createTBody();
    body.appendChild(row(data));
  }

  const source = new EventSource("/runs/" + encodeURIComponent(run) + "/events");
  say("Waiting for the run's cases...", "");
  source.addEventListener("case", (event) => addCase(JSON.parse(event.data)));
  source.addEventListener("counts", (event) => {
    say(countsText(JSON.parse(event.data)), "running");
  });
  source.addEventListener("end", (event) => {
    source.close();
    const counts = JSON.parse(event.data);
    section.dataset.status = counts.status;
    const badge = document.querySelector(".run-status");
    if (badge) {
      badge.textContent = counts.status;
      badge.className = "run-status " + counts.status;
    }
    const ended = counts.status === "finished" ? "The run finished" : "The run is " + counts.status;
    say(ended + ": " + countsText(counts) + ". ", counts.status);
    const reload = cell("a", "live-reload", "Reload the page");
    reload.href = window.location.pathname + window.location.search;
    line.appendChild(reload);
    line.append(" for its full results.");
  });
  source.addEventListener("error", () => {
    if (source.readyState === EventSource.CLOSED) {
      say("The view stopped answering; reload the page to try again.", "failed");
    } else if (section.dataset.status === "running") {
      say(line.textContent.replace(/ \(reconnecting\u2026\)$/, "") + " (reconnecting\u2026)", "running");
    }
  });
})();
