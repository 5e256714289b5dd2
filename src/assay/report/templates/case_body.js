  var USAGE = ["LLM use", "Calls", "Prompt tokens", "Completion tokens", "From cache"];

  function el(tag, cls, content) {
    var node = document.createElement(tag);
    if (cls) { node.className = cls; }
    if (content !== undefined && content !== null) { node.textContent = String(content); }
    return node;
  }
  function add(parent, child) { parent.appendChild(child); return child; }
  function say(parent, words) { parent.appendChild(document.createTextNode(words)); }
  function badge(state) { return el("span", "badge " + state, state === "n-a" ? "n/a" : state.replace(/-/g, " ")); }
  /* A metric's name, breakable after each underscore (never inside a word). */
  function name(parent, text) {
    String(text).split("_").forEach(function (part, i, parts) {
      say(parent, part + (i < parts.length - 1 ? "_" : ""));
      if (i < parts.length - 1) { add(parent, el("wbr")); }
    });
  }
  /* A table of cell texts; fill(td, value, index, row, tr) may fill a cell itself (true). */
  function table(cls, heads, nums, rows, fill) {
    var t = el("table", cls);
    var head = add(add(t, el("thead")), el("tr"));
    var body = add(t, el("tbody"));
    heads.forEach(function (h, i) { add(head, el("th", nums.indexOf(i) >= 0 ? "num" : "", h)); });
    rows.forEach(function (row) {
      var tr = add(body, el("tr"));
      heads.forEach(function (h, i) {
        var td = add(tr, el("td", nums.indexOf(i) >= 0 ? "num" : ""));
        if (!(fill && fill(td, row[i], i, row, tr))) { td.textContent = row[i]; }
      });
    });
    return t;
  }
  function msg(parent, who, words) {
    var m = add(parent, el("div", "msg " + who));
    add(m, el("span", "who", who));
    add(m, el("div", "text", words));
  }
  function metrics(rows) {
    return table("metric-rows", ["Metric", "Score", "Threshold", "Status", "Note"], [1, 2], rows,
      function (td, value, i, row, tr) {
        if (i === 0) { tr.className = row[3]; name(td, value); return true; }
        if (i !== 3) { return false; }
        td.appendChild(badge(value));
        return true;
      });
  }
  function turn(t) {
    var div = el("div", "turn");
    var h = add(div, el("h4", "", "Invocation " + t.n));
    if (t.id) { say(h, " "); add(h, el("span", "muted", t.id)); }
    msg(div, "user", t.user);
    t.steps.forEach(function (step) { msg(div, "step", step); });
    msg(div, "agent", t.agent);
    if ("expected" in t) { msg(div, "expected", t.expected); }
    if (t.calls.length) {
      var rows = t.calls.map(function (c, i) {
        var expected = !t.has_expected ? "(no expected invocation)" : c.length > 2 ? c[2] : c[0];
        return [i + 1, c[0] === null ? "(none)" : c[0], expected === null ? "(none)" : expected, c[1]];
      });
      add(div, table("trajectory", ["#", "Actual tool call", "Expected tool call"], [0], rows,
        function (td, value, i, row, tr) {
          tr.className = row[3] ? "match" : "mismatch";
          if (i === 0) { return false; }
          add(td, el("code", "", value));
          return true;
        }));
    }
    if (t.verdicts.length) {
      var chips = add(div, el("div", "verdicts"));
      t.verdicts.forEach(function (v) { add(chips, el("span", "chip " + v[2], v[0] + " " + v[1])); say(chips, " "); });
    }
    return div;
  }
  function judgedInvocation(inv, index) {
    var div = el("div", "judged-inv");
    add(div, el("p", "muted", "invocation " + (inv.id || index + 1) + (inv.votes ? " · votes " + inv.votes : "")));
    if (inv.reason) { add(div, el("p", "reason", inv.reason)); }
    if (inv.samples.length) {
      add(div, table("samples", ["Sample", "Score", "Judge's verdict", "Judge's answer"], [0, 1], inv.samples,
        function (td, value, i, row) {
          if (i === 0) { td.textContent = value; if (row[5]) { say(td, " "); add(td, el("span", "muted", "cached")); } return true; }
          if (i === 2) {
            td.textContent = value;
            if (row[6]) { add(td, el("div", "muted", row[6])); }
            if (row[4]) { add(td, el("div", "reason", row[4])); }
            return true;
          }
          if (i === 3) { add(td, el("pre", "", value)); if (row[7]) { add(td, el("div", "aligned", row[7])); } return true; }
          return false;
        }));
    }
    if (inv.rubrics.length) {
      add(div, table("rubrics", ["Rubric", "Property", "Verdict", "Score", "Votes", "Rationale"], [3], inv.rubrics));
    }
    if (inv.sentences.length) {
      add(div, table("sentences", ["Step", "Sentence", "Label", "Rationale", "Excerpt"], [], inv.sentences,
        function (td, value, i, row, tr) {
          tr.className = "label-" + row[2].toLowerCase().replace(/ /g, "_");
          return false;
        }));
    }
    return div;
  }
  function judged(j) {
    var div = el("div", "judged");
    var h = add(div, el("h4", "", j.metric));
    say(h, " ");
    add(h, el("span", "muted", "judge " + j.judge));
    j.inv.forEach(function (inv, i) { add(div, judgedInvocation(inv, i)); });
    return div;
  }
  function build(c) {
    var body = el("div", "case-body");
    if (c.reason) { add(body, el("p", "reason", c.reason)); }
    add(body, el("p", "muted", c.turns.length + " invocation(s) · " + c.duration));
    add(body, metrics(c.metrics));
    c.turns.forEach(function (t) { add(body, turn(t)); });
    c.judged.forEach(function (j) { add(body, judged(j)); });
    if (c.usage.length) { add(body, table("usage", USAGE, [1, 2, 3, 4], c.usage)); }
    return body;
  }
  var lines = null;  /* #case-data holds one JSON body a line, case c<n> on line n */
  function open(details) {
    if (details.querySelector(":scope > .case-body")) { return; }
    if (lines === null) { lines = document.getElementById("case-data").textContent.split("\n"); }
    details.appendChild(build(JSON.parse(lines[Number(details.id.slice(1))])));
  }
  document.addEventListener("toggle", function (event) {
    var target = event.target;
    if (target instanceof HTMLDetailsElement && target.open) { open(target); }
  }, true);
