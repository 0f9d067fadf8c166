// The item table of a scorespec HTML report: filters, sorting, paging, and each row's details.
// Everything from a run (ids, inputs, prompts, answers, reasons) is inserted as text nodes
// (textContent / createTextNode), never parsed as HTML. Only the current page's rows are built.
(function () {
  "use strict";

  var data = JSON.parse(document.getElementById("report-data").textContent);
  var rows = data.rows;
  var comparing = data.compareRunId !== null;
  var STATUSES = ["scored", "not_scorable", "failed"];
  var ITEM_FIELDS = ["input", "output", "ground_truth", "context"];

  var state = {label: "", status: "", min: null, max: null, text: "", sort: "index", desc: false, page: 0,
               size: 50, open: {}};
  var shown = [];  // indices into rows after filtering and sorting

  // --- small DOM helpers: text only ------------------------------------------------------------

  function el(tag, className, children) {
    var node = document.createElement(tag);
    if (className) node.className = className;
    (children || []).forEach(function (child) {
      if (child === null || child === undefined) return;
      node.appendChild(typeof child === "string" ? document.createTextNode(child) : child);
    });
    return node;
  }

  function text(value) {
    if (value === null || value === undefined) return "";
    return typeof value === "string" ? value : JSON.stringify(value);
  }

  function parsed(value) {  // JSON text as its value (a for_each stage's raw answers: a list of JSON texts)
    if (typeof value !== "string") return value;
    var trimmed = value.trim(), first = trimmed.charAt(0);
    if (first !== "{" && first !== "[") return value;
    try { value = JSON.parse(trimmed); } catch (e) { return value; }
    return Array.isArray(value) ? value.map(parsed) : value;
  }

  function pretty(value) {
    value = parsed(value);
    return typeof value === "string" ? value : JSON.stringify(value, null, 2);
  }

  function num(value) {
    if (value === null || value === undefined) return "";
    return String(Math.round(value * 10000) / 10000);
  }

  function byId(id) { return document.getElementById(id); }

  // --- what a row shows and how it is searched -------------------------------------------------

  function score(result) { return result && result.status === "scored" ? result.score : null; }

  function delta(row) {
    var a = score(row.result), b = score(row.other);
    return a === null || b === null ? null : Math.round((b - a) * 1e9) / 1e9;
  }

  function oneLine(value, limit) {
    var s = text(value).replace(/\s+/g, " ").trim();
    return s.length > limit ? s.slice(0, limit - 1) + "…" : s;
  }

  function why(result) {
    if (!result) return "";
    if (result.error) {
      var e = result.error;
      return "[" + e.kind + "]" + (e.stage ? " at " + e.stage : "") + ": " + e.message;
    }
    if (result.notScorable) return result.notScorable.reason;
    return result.reason || "";
  }

  var haystacks = [];
  function haystack(i) {
    if (haystacks[i] === undefined) {
      var row = rows[i], item = data.items[row.key] || {}, parts = [row.id, why(row.result), why(row.other)];
      ITEM_FIELDS.forEach(function (f) { parts.push(text(item[f])); });
      haystacks[i] = parts.join("\n").toLowerCase();
    }
    return haystacks[i];
  }

  // --- filtering, sorting, paging --------------------------------------------------------------

  function keep(i) {
    var row = rows[i], s = score(row.result);
    if (state.label && row.label !== state.label) return false;
    if (state.status && row.result.status !== state.status) return false;
    if (state.min !== null && (s === null || s < state.min)) return false;
    if (state.max !== null && (s === null || s > state.max)) return false;
    return !state.text || haystack(i).indexOf(state.text) >= 0;
  }

  var collator = new Intl.Collator(undefined, {numeric: true, sensitivity: "base"});
  var SORTS = {
    index: function (i) { return i; },
    id: function (i) { return rows[i].id; },
    label: function (i) { return rows[i].label; },
    status: function (i) { return STATUSES.indexOf(rows[i].result.status); },
    score: function (i) { return score(rows[i].result); },
    other: function (i) { return score(rows[i].other); },
    delta: function (i) { return delta(rows[i]); },
    why: function (i) { return why(rows[i].result); }
  };

  function compare(x, y) {
    var key = SORTS[state.sort], a = key(x), b = key(y);
    if (a === null && b === null) return x - y;
    if (a === null) return 1;   // rows without a value last, whichever the direction
    if (b === null) return -1;
    var order = typeof a === "string" ? collator.compare(a, b) : a - b;
    return (state.desc ? -order : order) || x - y;
  }

  function refilter() {
    shown = [];
    for (var i = 0; i < rows.length; i++) if (keep(i)) shown.push(i);
    shown.sort(compare);
    state.page = 0;
    render();
  }

  // --- the table -------------------------------------------------------------------------------

  var columns = [
    {key: "id", title: "item"}, {key: "label", title: "scorer"}, {key: "status", title: "status"},
    {key: "score", title: comparing ? "score A" : "score"}
  ];
  if (comparing) columns.push({key: "other", title: "score B"}, {key: "delta", title: "Δ (B − A)"});
  columns.push({key: "why", title: "reason or error"});

  function header() {
    var tr = el("tr");
    columns.forEach(function (column) {
      var button = el("button", "sort", [column.title]);
      button.type = "button";
      button.dataset.sort = column.key;
      var th = el("th", null, [button]);
      if (state.sort === column.key) th.setAttribute("aria-sort", state.desc ? "descending" : "ascending");
      tr.appendChild(th);
    });
    var thead = byId("items-head");
    thead.replaceChildren(tr);
  }

  function statusBadge(result) {
    return el("span", "status status-" + (result ? result.status : "absent"),
              [result ? result.status.replace("_", " ") : "absent"]);
  }

  function rowNode(i) {
    var row = rows[i], open = !!state.open[i];
    var toggle = el("button", "open", [(open ? "▾ " : "▸ ") + row.id]);
    toggle.type = "button";
    toggle.dataset.row = String(i);
    toggle.setAttribute("aria-expanded", open ? "true" : "false");
    var cells = [el("td", "id", [toggle]), el("td", null, [row.label]), el("td", null, [statusBadge(row.result)]),
                 el("td", "num", [num(score(row.result))])];
    if (comparing) {
      cells.push(el("td", "num", [row.other ? num(score(row.other)) : "—"]));
      var d = delta(row);
      var shownDelta = d === null ? "" : (d > 0 ? "+" : "") + num(d);
      cells.push(el("td", "num" + (d > 0 ? " up" : d < 0 ? " down" : ""), [shownDelta]));
    }
    cells.push(el("td", "why", [oneLine(why(row.result), 160)]));
    var tr = el("tr", "row status-row-" + row.result.status, cells);
    tr.dataset.row = String(i);
    return tr;
  }

  function render() {
    header();
    var body = byId("items-body"), pages = Math.max(1, Math.ceil(shown.length / state.size));
    state.page = Math.min(state.page, pages - 1);
    var start = state.page * state.size, end = Math.min(shown.length, start + state.size);
    var fragment = document.createDocumentFragment();
    for (var k = start; k < end; k++) {
      var i = shown[k];
      fragment.appendChild(rowNode(i));
      if (state.open[i]) fragment.appendChild(detailRow(i));
    }
    body.replaceChildren(fragment);
    byId("items-count").textContent = shown.length === 0 ? "no result matches" :
      "results " + (start + 1) + "–" + end + " of " + shown.length +
      (shown.length < rows.length ? " (" + rows.length + " in all)" : "");
    byId("page-info").textContent = "page " + (state.page + 1) + " of " + pages;
    byId("page-prev").disabled = state.page === 0;
    byId("page-next").disabled = state.page >= pages - 1;
  }

  // --- a row's details -------------------------------------------------------------------------

  function block(title, value, className) {
    return el("div", "field", [el("div", "field-name", [title]), el("pre", className || null, [pretty(value)])]);
  }

  function listOfRecords(value) {
    if (!Array.isArray(value) || value.length === 0) return null;
    var keys = [];
    for (var n = 0; n < value.length; n++) {
      var v = value[n];
      if (v === null || typeof v !== "object" || Array.isArray(v)) return null;
      Object.keys(v).forEach(function (k) { if (keys.indexOf(k) < 0) keys.push(k); });
    }
    if (keys.length > 8) return null;
    var head = el("tr", null, [el("th", null, ["#"])].concat(keys.map(function (k) { return el("th", null, [k]); })));
    var body = value.map(function (v, index) {
      return el("tr", null, [el("td", "num", [String(index)])].concat(keys.map(function (k) {
        return el("td", "verdict-" + String(v[k]).toLowerCase().replace(/[^a-z_]/g, ""), [text(v[k])]);
      })));
    });
    return el("table", "records", [el("thead", null, [head]), el("tbody", null, body)]);
  }

  function resultView(value) {  // a list of records, or an object holding one list of them, as a table
    var table = listOfRecords(value);
    if (!table && value !== null && typeof value === "object" && !Array.isArray(value)) {
      var keys = Object.keys(value);
      if (keys.length === 1) table = listOfRecords(value[keys[0]]);
    }
    return table || el("pre", null, [pretty(value)]);
  }

  function usageLine(u) {
    if (!u) return "";
    var parts = [];
    if (u.calls) parts.push(u.calls + " call" + (u.calls === 1 ? "" : "s"));
    if (u.tokensIn || u.tokensOut) parts.push((u.tokensIn || 0) + " tokens in / " + (u.tokensOut || 0) + " out");
    if (u.reasks) parts.push(u.reasks + " re-ask" + (u.reasks === 1 ? "" : "s"));
    if (u.transportRetries) parts.push(u.transportRetries + " retr" + (u.transportRetries === 1 ? "y" : "ies"));
    if (u.seconds) parts.push(num(u.seconds) + " s");
    if (u.cacheHits) parts.push(u.cacheHits + " cache hit" + (u.cacheHits === 1 ? "" : "s"));
    Object.keys(u).forEach(function (k) {
      if (k.toLowerCase().indexOf("cost") === 0 && typeof u[k] === "number") parts.push(k + " " + num(u[k]));
    });
    return parts.join(" · ");
  }

  function promptText(prompt) {  // a prompt travels as the positions of its lines in data.lines
    return Array.isArray(prompt) ? prompt.map(function (n) { return data.lines[n]; }).join("\n") : prompt;
  }

  function stageView(id, record, result) {
    var failed = result.error && result.error.stage === id;
    var status = record.skipped ? "skipped" : failed ? "failed" : record.result !== null ? "ok" : "no result";
    var summary = el("summary", null, [el("span", "stage-id", [id]), " " + record.kind + " · ",
                                       el("span", "stage-" + status.replace(" ", "-"), [status]),
                                       record.usage && record.usage.calls ? " · " + usageLine(record.usage) : ""]);
    var parts = [summary];
    if (!record.skipped && record.result !== null) {
      parts.push(el("div", "field", [el("div", "field-name", ["result"]), resultView(record.result)]));
    }
    if (record.rawAnswer !== null && record.rawAnswer !== undefined) parts.push(block("raw answer", record.rawAnswer));
    if (record.prompt !== null && record.prompt !== undefined) {
      parts.push(block("prompt", promptText(record.prompt), "prompt"));
    }
    if (record.attempts > 1) parts.push(el("p", "dim", [record.attempts + " attempts"]));
    var details = el("details", "stage", parts);
    details.dataset.stage = id;
    if (failed) details.open = true;
    return details;
  }

  function resultSide(title, result) {
    var parts = [el("h4", null, [title])];
    if (!result) {
      parts.push(el("p", "dim", ["no result for this item in this run"]));
      return el("div", "side", parts);
    }
    var head = [statusBadge(result)];
    if (result.status === "scored") head.push(" score ", el("strong", null, [num(result.score)]));
    parts.push(el("p", null, head));
    if (result.error) {
      var e = result.error;
      parts.push(el("div", "error", [
        el("div", "field-name", ["error" + (e.stage ? " at stage " + e.stage : "") + " · " + e.kind +
                                 (e.attempts ? " · " + e.attempts + " attempt" + (e.attempts === 1 ? "" : "s") : "")]),
        el("pre", null, [e.message])]));
      if (e.rawAnswer) parts.push(block("last raw answer", e.rawAnswer));
    }
    if (result.notScorable) parts.push(block("not scorable", result.notScorable.reason));
    if (result.reason) parts.push(block("reason", result.reason));
    var stages = result.stages || {};
    Object.keys(stages).forEach(function (id) { parts.push(stageView(id, stages[id], result)); });
    var usage = usageLine(result.usage);
    parts.push(el("p", "dim", [
      "model " + (result.model || "—") + " · spec " + result.scorer + " v" + result.specVersion + " (" +
      String(result.specHash || "").slice(0, 12) + ")" + (usage ? " · " + usage : "")]));
    return el("div", "side", parts);
  }

  function itemView(item, title) {
    var parts = [el("h4", null, [title])];
    if (!item) {
      parts.push(el("p", "dim", ["the item's data is not in this report (read from an out file alone); the prompts " +
                                 "below show what the judge was given"]));
      return el("div", "item", parts);
    }
    ITEM_FIELDS.forEach(function (f) {
      if (!(f in item) || item[f] === null) return;
      if (f === "context" && Array.isArray(item[f])) {
        item[f].forEach(function (passage, n) { parts.push(block("context [" + n + "]", passage)); });
      } else {
        parts.push(block(f.replace("_", " "), item[f]));
      }
    });
    Object.keys(item).forEach(function (k) {
      if (k !== "id" && ITEM_FIELDS.indexOf(k) < 0) parts.push(block(k, item[k]));
    });
    return el("div", "item", parts);
  }

  function detailRow(i) {
    var row = rows[i];
    var heading = el("h3", null, ["item ", el("code", null, [row.id]), " · " + row.label]);
    var item = data.items[row.key];
    var parts = [heading];
    if (comparing) {
      var otherItem = data.otherItems[row.key];
      parts.push(otherItem ? el("div", "sides", [itemView(item, "item in run A"), itemView(otherItem, "item in run B")])
                           : itemView(item, "item"));
      parts.push(el("div", "sides", [resultSide("run A · " + data.runId, row.result),
                                     resultSide("run B · " + data.compareRunId, row.other)]));
    } else {
      parts.push(el("div", "sides", [itemView(item, "item"), resultSide("result", row.result)]));
    }
    var td = el("td", null, [el("div", "detail", parts)]);
    td.colSpan = columns.length;
    var tr = el("tr", "detail-row", [td]);
    tr.dataset.detail = String(i);
    return tr;
  }

  // --- wiring ----------------------------------------------------------------------------------

  function numberOrNull(value) {
    var v = parseFloat(value);
    return isNaN(v) ? null : v;
  }

  var labelSelect = byId("filter-label");
  data.labels.forEach(function (label) {
    var option = el("option", null, [label]);
    option.value = label;
    labelSelect.appendChild(option);
  });

  labelSelect.addEventListener("change", function () { state.label = labelSelect.value; refilter(); });
  byId("filter-status").addEventListener("change", function (e) { state.status = e.target.value; refilter(); });
  byId("filter-min").addEventListener("input", function (e) { state.min = numberOrNull(e.target.value); refilter(); });
  byId("filter-max").addEventListener("input", function (e) { state.max = numberOrNull(e.target.value); refilter(); });
  var timer = null;
  byId("filter-text").addEventListener("input", function (e) {
    clearTimeout(timer);
    timer = setTimeout(function () { state.text = e.target.value.trim().toLowerCase(); refilter(); }, 120);
  });
  byId("page-size").addEventListener("change", function (e) { state.size = parseInt(e.target.value, 10); render(); });
  byId("page-prev").addEventListener("click", function () { state.page -= 1; render(); });
  byId("page-next").addEventListener("click", function () { state.page += 1; render(); });
  byId("items-head").addEventListener("click", function (e) {
    var button = e.target.closest("button[data-sort]");
    if (!button) return;
    var key = button.dataset.sort;
    state.desc = state.sort === key ? !state.desc : false;
    state.sort = key;
    shown.sort(compare);
    render();
  });
  byId("items-body").addEventListener("click", function (e) {
    var button = e.target.closest("button[data-row]");
    if (!button) return;
    var i = parseInt(button.dataset.row, 10);
    if (state.open[i]) delete state.open[i]; else state.open[i] = true;
    render();
  });
  document.addEventListener("click", function (e) {
    var link = e.target.closest("button[data-show-item]");
    if (!link) return;
    var key = link.dataset.showItem, label = link.dataset.label;
    state.label = ""; state.status = ""; state.min = null; state.max = null; state.text = "";
    labelSelect.value = ""; byId("filter-status").value = "";
    byId("filter-min").value = ""; byId("filter-max").value = "";
    shown = [];
    for (var i = 0; i < rows.length; i++) {
      if (rows[i].key === key && (!label || rows[i].label === label)) { shown.push(i); state.open[i] = true; }
    }
    byId("filter-text").value = "";
    state.page = 0;
    render();
    byId("items").scrollIntoView();
  });

  document.body.classList.add("js");
  refilter();
})();
