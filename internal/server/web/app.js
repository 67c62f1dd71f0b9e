// dpkit query service page: lists the datasets the key may see, shows each one's budget,
// the privacy curve of what has been spent, the release history, and runs queries; for an
// admin key, also the administration view (datasets, keys, grants).
// The API key lives in sessionStorage (this tab only) and is sent as a Bearer token.
"use strict";

const KEY = "dpkit.key";
const $ = (id) => document.getElementById(id);
let current = null; // the selected dataset's info
let me = null; // the key: {id, name, role}

// fmt prints a privacy parameter (ε, δ): a few significant digits, an exponent only for
// very small or very large values.
function fmt(x, digits = 4) {
  if (x === null || x === undefined) return "–";
  if (x === 0) return "0";
  const a = Math.abs(x);
  if (a >= 1e5 || a < 1e-3) return x.toExponential(digits - 1);
  return Number(x.toPrecision(digits)).toString();
}

// fmtValue prints an answer (a count, a sum, an average) in full, with digit grouping and
// never an exponent for the magnitudes answers have: 100,000 and 219.83, not 1.00000e+5.
function fmtValue(x) {
  if (x === null || x === undefined) return "–";
  const a = Math.abs(x);
  if (a >= 1e15 || (a > 0 && a < 1e-6)) return x.toExponential(5);
  const decimals = Number.isInteger(x) ? 0 : a >= 1000 ? 1 : a >= 1 ? 2 : 6;
  return x.toLocaleString("en-US", { maximumFractionDigits: decimals, minimumFractionDigits: 0 });
}

async function api(method, path, body) {
  const opts = { method, headers: { Authorization: "Bearer " + sessionStorage.getItem(KEY) } };
  if (body !== undefined) {
    opts.headers["Content-Type"] = "application/json";
    opts.body = JSON.stringify(body);
  }
  const res = await fetch(path, opts);
  let data = null;
  if (res.status !== 204) {
    try { data = await res.json(); } catch (e) { data = { error: "bad response (" + res.status + ")" }; }
  }
  if (!res.ok) {
    const err = new Error((data && data.error) || res.statusText);
    err.status = res.status;
    err.position = data && data.position;
    throw err;
  }
  return data;
}

function showLogin(msg) {
  $("login").hidden = false;
  $("app").hidden = true;
  $("admin").hidden = true;
  $("logout").hidden = true;
  $("who").textContent = "";
  $("login-error").textContent = msg || "";
}

async function start() {
  if (!sessionStorage.getItem(KEY)) return showLogin();
  try {
    me = await api("GET", "/v1/whoami");
  } catch (e) {
    sessionStorage.removeItem(KEY);
    return showLogin(e.status === 401 ? "That key is not valid." : e.message);
  }
  $("login").hidden = true;
  $("app").hidden = false;
  $("logout").hidden = false;
  $("who").textContent = me.name + " (" + me.role + ")";
  await loadDatasets();
  $("admin").hidden = me.role !== "admin";
  if (me.role === "admin") await loadAdmin();
}

// gaugeFraction is the part of the budget used: releases out of max_queries under the
// fixed policy (out of the plan's length under the plan policy), spent ε out of total ε
// under the adaptive one (under the Gaussian filter, ε of the level reached at the total
// δ, which reaches the total ε when Σμ² reaches μ²).
function gaugeFraction(b) {
  if (b.policy.mode === "fixed" && b.policy.max_queries > 0) return b.releases / b.policy.max_queries;
  if (b.policy.mode === "plan" && b.policy.plan) return Math.min(1, b.releases / b.policy.plan.length);
  return b.total.epsilon > 0 ? Math.min(1, b.spent.epsilon / b.total.epsilon) : 0;
}

// exhausted says whether a budget refuses every further query of the policy's cost.
function exhausted(b) {
  return b.policy.mode === "adaptive" ? gaugeFraction(b) >= 1 : b.remaining_queries === 0;
}

// policyText describes a dataset's policy in a few words.
function policyText(p) {
  switch (p.mode) {
    case "fixed":
      return "fixed, " + p.max_queries + " queries" + (p.mechanism === "gaussian" ? ", Gaussian" : p.pure ? ", pure ε" : "");
    case "plan":
      return "plan of " + (p.plan || []).length + " queries";
    default:
      return "adaptive, " + (p.filter || "basic") + " filter";
  }
}

// paint sets a gauge's fill (the big one or a dataset's mini gauge) and its colour:
// green, orange from three quarters, red when exhausted.
function paint(fill, b) {
  const f = gaugeFraction(b);
  fill.style.width = (100 * Math.min(1, f)).toFixed(1) + "%";
  fill.classList.toggle("full", exhausted(b));
  fill.classList.toggle("warn", !exhausted(b) && f >= 0.75);
}

async function loadDatasets() {
  const { datasets } = await api("GET", "/v1/datasets");
  const ul = $("datasets");
  ul.replaceChildren();
  if (datasets.length === 0) {
    const li = document.createElement("li");
    li.textContent = "No datasets visible to this key.";
    ul.append(li);
    $("detail").hidden = true;
    return;
  }
  for (const d of datasets) {
    const li = document.createElement("li");
    li.dataset.name = d.name;
    const title = document.createElement("strong");
    title.textContent = d.name;
    const mini = document.createElement("div");
    mini.className = "mini";
    const fill = document.createElement("div");
    mini.append(fill);
    li.append(title, mini);
    li.addEventListener("click", () => select(d));
    ul.append(li);
    api("GET", "/v1/datasets/" + encodeURIComponent(d.name) + "/budget")
      .then((b) => { paint(fill, b); markSpent(li, b); })
      .catch(() => {});
  }
  const keep = current && datasets.find((d) => d.name === current.name);
  select(keep || datasets[0]);
}

// markSpent labels a dataset of the list whose budget is exhausted.
function markSpent(li, b) {
  let tag = li.querySelector(".state");
  if (!exhausted(b)) { if (tag) tag.remove(); return; }
  if (!tag) {
    tag = document.createElement("span");
    tag.className = "state";
    li.querySelector("strong").after(tag);
  }
  tag.textContent = "budget spent";
}

async function select(d) {
  current = d;
  for (const li of $("datasets").children) li.classList.toggle("selected", li.dataset.name === d.name);
  $("detail").hidden = false;
  $("ds-name").textContent = d.name;
  $("ds-columns").textContent = "columns: " + Object.entries(d.columns).map(([n, c]) => {
    let s = n + " " + c.type;
    if (c.min !== undefined) s += " [" + c.min + ", " + c.max + "]";
    if (c.domain) s += " ∈ {" + c.domain.join(", ") + "}";
    return s;
  }).join("; ");
  $("sql").value = "SELECT COUNT(*) FROM " + d.name;
  setupCost(d.policy);
  $("answer").className = "answer";
  $("answer").textContent = "";
  await refresh();
}

// setupCost shows what a query under the policy may give: under the adaptive policy its
// ε (and δ, and Gaussian noise) or, under the Gaussian filter, its μ — or instead an
// accuracy, the half-width of the 95% intervals wanted; under fixed and plan nothing
// (the policy sets the cost).
function setupCost(p) {
  const adaptive = p.mode === "adaptive", gaussian = p.filter === "gaussian";
  $("cost-row").hidden = !adaptive;
  const kind = $("cost-kind");
  kind.replaceChildren(new Option(gaussian ? "μ" : "ε", gaussian ? "mu" : "epsilon"), new Option("accuracy ±", "accuracy"));
  $("cost").value = "";
  $("delta").value = "";
  $("gauss").checked = false;
  $("gauss-label").hidden = gaussian;
  $("delta-label").hidden = gaussian;
  if (!adaptive) {
    $("cost-help").textContent = p.mode === "plan" ? "The plan policy sets the cost of each query, in order."
      : "The fixed policy sets the cost (and the noise" + (p.mechanism === "gaussian" ? ": Gaussian" : "") + ") of every query.";
  } else {
    $("cost-help").textContent = gaussian
      ? "Gaussian filter: give the query's μ (Gaussian DP), or an accuracy (the half-width of the 95% intervals): the cheapest μ meeting it is charged."
      : "Give the query's ε (and δ; Gaussian noise needs δ > 0), or an accuracy (the half-width of the 95% intervals): the cheapest ε meeting it is charged.";
  }
}

// costBody adds the cost fields of the form to a query's body.
function costBody(body) {
  if (current.policy.mode !== "adaptive") return body;
  const v = Number($("cost").value), kind = $("cost-kind").value;
  if (kind === "accuracy") body.accuracy = { ci95_halfwidth: v };
  else body[kind] = v;
  if (current.policy.filter !== "gaussian") {
    if ($("delta").value !== "") body.delta = Number($("delta").value);
    if ($("gauss").checked) body.mechanism = "gaussian";
  }
  return body;
}

async function refresh() {
  if (!current) return;
  const name = encodeURIComponent(current.name);
  const b = await api("GET", "/v1/datasets/" + name + "/budget");
  // The most recent releases: numbers above releases − RECENT (an analyst key sees its
  // own among them).
  const after = Math.max(0, b.releases - RECENT);
  const [c, r] = await Promise.all([
    api("GET", "/v1/datasets/" + name + "/curve"),
    api("GET", "/v1/datasets/" + name + "/releases?limit=" + RECENT + "&cursor=" + after),
  ]);
  showBudget(b);
  drawCurve(c);
  showReleases(r.releases, after);
  const li = [...$("datasets").children].find((x) => x.dataset.name === current.name);
  if (li) { paint(li.querySelector(".mini div"), b); markSpent(li, b); }
  if (me && me.role === "admin") loadAdmin().catch(() => {});
}

const RECENT = 50; // releases shown

function showBudget(b) {
  const f = gaugeFraction(b);
  paint($("gauge-fill"), b);
  $("gauge").setAttribute("aria-valuenow", f.toFixed(3));
  let text = "Spent ε = " + fmt(b.spent.epsilon) + ", δ = " + fmt(b.spent.delta) +
    " of the total ε = " + fmt(b.total.epsilon) + ", δ = " + fmt(b.total.delta) + ". ";
  const p = b.policy;
  if (p.mode === "fixed") {
    text += b.releases + " of " + p.max_queries + " queries used, " + b.remaining_queries + " left";
    if (b.per_query) text += " (each costs ε = " + fmt(b.per_query.epsilon) + ", δ = " + fmt(b.per_query.delta) + ")";
    text += p.mechanism === "gaussian" ? "; Gaussian releases, composed exactly as Gaussian DP."
      : p.pure ? "; pure ε-DP releases (δ = 0 each), composed exactly." : ".";
  } else if (p.mode === "plan") {
    text += b.releases + " of " + p.plan.length + " planned queries used, " + b.remaining_queries + " left";
    if (b.per_query) text += " (the next costs ε = " + fmt(b.per_query.epsilon) + ", δ = " + fmt(b.per_query.delta) + ")";
    text += ".";
  } else if (p.filter === "gaussian") {
    text += b.releases + " releases (Gaussian filter: each query names its μ or an accuracy; queries are accepted while Σμ² ≤ μ² of the total).";
  } else {
    text += b.releases + " releases (adaptive policy, " + (p.filter || "basic") + " filter: each query names its ε or an accuracy).";
  }
  if (exhausted(b)) {
    text += " The budget is spent: every further query is refused" +
      (current && current.demo ? " (a demo dataset: start over with dpkit serve --demo --reset)." : ".");
  }
  $("budget-text").textContent = text;
}

const SVG = "http://www.w3.org/2000/svg";
function el(name, attrs, text) {
  const e = document.createElementNS(SVG, name);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
  if (text !== undefined) e.textContent = text;
  return e;
}

// drawCurve draws δ(ε) on a logarithmic δ axis, with the total budget as a dot.
function drawCurve(c) {
  $("curve-note").textContent = {
    exact: "δ(ε) of the composition of the recorded releases (optimal composition, Kairouz–Oh–Viswanath Thm 3.3).",
    gaussian: "δ(ε) of the recorded Gaussian releases: K releases of μ0-GDP are exactly √K·μ0-GDP (Dong–Roth–Su).",
    filter: "δ(ε) of the guarantee the privacy filter certifies for what has been spent (costs chosen adaptively: optimal composition does not apply).",
  }[c.theorem] || "δ(ε) of what has been spent.";
  $("curve-note").textContent += " The dot is the total budget: the curve stays below it.";
  const box = $("curve");
  box.replaceChildren();
  const W = 520, H = 300, L = 60, R = 14, T = 12, B = 40;
  const svg = el("svg", { width: W, height: H, viewBox: `0 0 ${W} ${H}`, role: "img", "aria-label": "privacy curve" });
  box.append(svg);
  // The points with δ > 0, then the first where δ reaches 0, drawn at the axis' bottom
  // (pure ε releases compose to a curve that is 0 from their Σε on).
  const positive = c.points.filter((p) => p.delta > 0);
  const drop = c.points.find((p, i) => p.delta === 0 && i > 0 && c.points[i - 1].delta > 0);
  const pts = drop ? positive.concat([drop]) : positive;
  const xmax = c.points.length ? c.points[c.points.length - 1].epsilon : 1.5 * c.total.epsilon;
  let lo = Math.min(c.total.delta > 0 ? c.total.delta / 100 : 1e-12, ...positive.map((p) => p.delta));
  lo = Math.max(1e-15, Math.pow(10, Math.floor(Math.log10(lo))));
  const x = (e) => L + (W - L - R) * e / xmax;
  const y = (d) => T + (H - T - B) * (Math.log10(1) - Math.log10(Math.max(d, lo))) / (0 - Math.log10(lo));
  for (let k = Math.log10(lo); k <= 0; k += Math.max(1, Math.round(-Math.log10(lo) / 6))) {
    svg.append(el("line", { class: "grid", x1: L, x2: W - R, y1: y(10 ** k), y2: y(10 ** k) }));
    svg.append(el("text", { x: L - 6, y: y(10 ** k) + 4, "text-anchor": "end" }, "1e" + k));
  }
  for (let i = 0; i <= 5; i++) {
    const e = xmax * i / 5;
    svg.append(el("text", { x: x(e), y: H - B + 16, "text-anchor": "middle" }, fmt(e, 3)));
  }
  svg.append(el("line", { class: "axis", x1: L, x2: W - R, y1: H - B, y2: H - B }));
  svg.append(el("line", { class: "axis", x1: L, x2: L, y1: T, y2: H - B }));
  svg.append(el("text", { x: (L + W - R) / 2, y: H - 6, "text-anchor": "middle" }, "total ε"));
  svg.append(el("text", { x: 14, y: (T + H - B) / 2, transform: `rotate(-90 14 ${(T + H - B) / 2})`, "text-anchor": "middle" }, "δ(ε)"));
  if (pts.length > 1) {
    const d = pts.map((p, i) => (i ? "L" : "M") + x(p.epsilon).toFixed(1) + " " + y(p.delta).toFixed(1)).join(" ");
    svg.append(el("path", { class: "region", d: d + ` L ${x(pts[pts.length - 1].epsilon).toFixed(1)} ${T} L ${x(pts[0].epsilon).toFixed(1)} ${T} Z` }));
    svg.append(el("path", { class: "curve", id: "curve-path", d }));
  } else {
    svg.append(el("text", { x: (L + W) / 2, y: (T + H - B) / 2, "text-anchor": "middle", class: "muted" }, "nothing spent yet"));
  }
  if (c.total.delta > 0) {
    svg.append(el("circle", { class: "budget", cx: x(c.total.epsilon), cy: y(c.total.delta), r: 4 }));
    svg.append(el("text", { x: x(c.total.epsilon) + 7, y: y(c.total.delta) - 6 }, "budget"));
  }
}

function showReleases(rels, after) {
  const tb = $("releases").querySelector("tbody");
  tb.replaceChildren();
  $("releases-note").textContent = (after > 0 ? "The most recent releases" : "Every release") +
    (me && me.role !== "admin" ? " of this key" : "") + ", newest first.";
  for (const r of [...rels].reverse()) {
    const tr = document.createElement("tr");
    const ans = r.answer ? answerSummary(r.answer) : "";
    const cells = [r.release, r.time.replace("T", " ").slice(0, 19), r.analyst, r.sql || r.mechanism, ans, fmt(r.charged.epsilon), fmt(r.charged.delta)];
    cells.forEach((v, i) => {
      const td = document.createElement("td");
      if (i === 3) { const code = document.createElement("code"); code.textContent = v; td.append(code); }
      else td.textContent = v;
      tr.append(td);
    });
    tb.append(tr);
  }
}

// answerSummary is an answer on one line: the value, the values of several aggregates,
// or each group's key and value(s).
function answerSummary(a) {
  if (a.result !== null && a.result !== undefined) return fmtValue(a.result);
  if (a.values) return a.values.map(fmtValue).join(" / ");
  return (a.groups || []).map((g) => [].concat(g.key).join("/") + ": " +
    (g.values ? g.values.map(fmtValue).join(" / ") : fmtValue(g.value))).join(", ");
}

// multiple says whether an answer has the shape of several aggregates or grouping
// columns (values and intervals per aggregate).
function multiple(a) {
  return a.values !== undefined || (a.groups || []).some((g) => g.values !== undefined);
}

// fmtInterval prints a 95% interval, or "–" where the error depends on the data.
function fmtInterval(ci) {
  return ci ? "[" + ci.map(fmtValue).join(", ") + "]" : "–";
}

// answerTable is the table of an answer of several aggregates or grouping columns: one
// row per group (one row if ungrouped), a column per grouping column and per aggregate,
// each value with its 95% interval.
function answerTable(a) {
  const t = document.createElement("table");
  t.id = "answer-table";
  const head = document.createElement("tr");
  for (const h of [...(a.group_by || []), ...a.aggregates]) {
    const th = document.createElement("th");
    th.textContent = h;
    head.append(th);
  }
  const thead = document.createElement("thead");
  thead.append(head);
  const tbody = document.createElement("tbody");
  const rows = a.values ? [{ key: [], values: a.values, ci95: a.ci95 }] : a.groups;
  for (const g of rows) {
    const tr = row(tbody, [].concat(g.key));
    g.values.forEach((v, i) => {
      const td = document.createElement("td");
      const ci = document.createElement("span");
      ci.className = "muted ci";
      ci.textContent = " " + fmtInterval(g.ci95[i]);
      td.append(fmtValue(v), ci);
      tr.append(td);
    });
  }
  t.append(thead, tbody);
  return t;
}

function showAnswer(a) {
  const box = $("answer");
  box.className = "answer ok";
  box.replaceChildren();
  const v = document.createElement("div");
  v.className = "value";
  v.id = "answer-value";
  if (multiple(a)) {
    v.append(answerTable(a));
  } else if (a.result !== null && a.result !== undefined) {
    v.textContent = fmtValue(a.result);
  } else if ((a.groups || []).length === 0) {
    v.textContent = "no group released";
  } else {
    v.textContent = (a.groups || []).map((g) => g.key + ": " + fmtValue(g.value)).join("   ");
  }
  const d = document.createElement("div");
  d.className = "muted";
  d.id = "answer-detail";
  // The exponential mechanism of MEDIAN/QUANTILE has its scale in ranks (positions in
  // the sorted data), not in the column's units, and no data-independent interval.
  const ranks = a.mechanism.startsWith("exponential");
  const scale = ranks ? "scale " + fmtValue(a.scale) + " ranks (the error in the column's units depends on the data)"
    : "noise scale " + fmtValue(a.scale);
  const ci = a.ci95 && !multiple(a) ? "; 95% interval [" + a.ci95.map(fmtValue).join(", ") + "]" : "";
  const mu = a.mu ? "; μ = " + fmt(a.mu) + " (Gaussian DP)" : "";
  d.textContent = a.mechanism + ", " + scale + ci + mu + "; charged ε = " + fmt(a.charged.epsilon) + ", δ = " + fmt(a.charged.delta) +
    (a.remaining_queries !== null && a.remaining_queries !== undefined ? "; " + a.remaining_queries + " queries left" : "");
  box.append(v, d);
}

function showError(e, sql) {
  const box = $("answer");
  box.className = "answer err";
  box.replaceChildren();
  const m = document.createElement("div");
  m.id = "answer-error";
  m.textContent = e.message;
  box.append(m);
  if (typeof e.position === "number") {
    const pre = document.createElement("pre");
    pre.textContent = sql + "\n" + " ".repeat(e.position) + "^";
    box.append(pre);
  }
}

// loadAdmin fills the administration view: every dataset with its budget, every key
// with its grants, and the choices of the forms.
async function loadAdmin() {
  const [{ datasets }, { keys }] = await Promise.all([api("GET", "/v1/datasets"), api("GET", "/v1/keys")]);
  const budgets = await Promise.all(datasets.map((d) => api("GET", "/v1/datasets/" + encodeURIComponent(d.name) + "/budget")));
  const dt = $("admin-datasets").querySelector("tbody");
  dt.replaceChildren();
  datasets.forEach((d, i) => {
    const b = budgets[i];
    const left = b.policy.mode !== "adaptive" ? b.remaining_queries + " queries" : "ε " + fmt(b.total.epsilon - b.spent.epsilon);
    row(dt, [d.name + (d.demo ? " (demo)" : ""), d.source || "", policyText(b.policy),
      fmt(b.total.epsilon) + ", " + fmt(b.total.delta), fmt(b.spent.epsilon) + ", " + fmt(b.spent.delta), b.releases, left]);
  });
  const kt = $("admin-keys").querySelector("tbody");
  kt.replaceChildren();
  for (const k of keys) {
    const state = (k.revoked ? "revoked" : "valid") + (k.demo ? ", demo" : "");
    const tr = row(kt, [k.id, k.name, k.role, k.role === "admin" ? "all" : k.datasets.join(", "), state, ""]);
    tr.dataset.key = k.id;
    if (!k.revoked && k.id !== me.id) {
      const btn = document.createElement("button");
      btn.type = "button";
      btn.textContent = "Revoke";
      btn.addEventListener("click", () => adminAction("DELETE", "/v1/keys/" + encodeURIComponent(k.id), "Revoked key " + k.id + "."));
      tr.lastChild.append(btn);
    }
  }
  // The view is rebuilt after every change (and as the list refreshes): keep what the
  // admin has chosen in the forms meanwhile.
  const checks = $("key-datasets");
  const gk = $("grant-key"), gd = $("grant-dataset");
  const keep = { key: gk.value, dataset: gd.value, checked: new Set([...checks.querySelectorAll("input:checked")].map((x) => x.value)) };
  checks.replaceChildren();
  gk.replaceChildren();
  gd.replaceChildren();
  for (const d of datasets) {
    const label = document.createElement("label");
    const box = document.createElement("input");
    box.type = "checkbox";
    box.value = d.name;
    label.append(box, " " + d.name + " ");
    checks.append(label);
    gd.append(new Option(d.name, d.name));
  }
  for (const k of keys) if (!k.revoked && k.role === "analyst") gk.append(new Option(k.name + " (" + k.id + ")", k.id));
  if ([...gk.options].some((o) => o.value === keep.key)) gk.value = keep.key;
  if ([...gd.options].some((o) => o.value === keep.dataset)) gd.value = keep.dataset;
  for (const box of checks.querySelectorAll("input")) box.checked = keep.checked.has(box.value);
}

// row appends a table row of text cells to tbody and returns it.
function row(tbody, cells) {
  const tr = document.createElement("tr");
  for (const v of cells) {
    const td = document.createElement("td");
    td.textContent = v;
    tr.append(td);
  }
  tbody.append(tr);
  return tr;
}

// adminAction sends one admin request, says what happened, and reloads the view.
async function adminAction(method, path, done, body) {
  const msg = $("admin-message");
  try {
    const r = await api(method, path, body);
    msg.className = "muted";
    msg.textContent = done;
    await loadAdmin();
    return r;
  } catch (e) {
    msg.className = "error";
    msg.textContent = e.message;
    return null;
  }
}

function newKey() {
  if (crypto.randomUUID) return crypto.randomUUID();
  const b = new Uint8Array(16);
  crypto.getRandomValues(b);
  return [...b].map((x) => x.toString(16).padStart(2, "0")).join("");
}

document.addEventListener("DOMContentLoaded", () => {
  $("login-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    sessionStorage.setItem(KEY, $("key").value.trim());
    $("key").value = "";
    start();
  });
  $("logout").addEventListener("click", () => {
    sessionStorage.removeItem(KEY);
    current = null;
    me = null;
    $("admin").hidden = true;
    $("key-secret").hidden = true;
    showLogin();
  });
  $("query-form").addEventListener("submit", async (ev) => {
    ev.preventDefault();
    if (!current) return;
    const sql = $("sql").value;
    const body = costBody({ sql, idempotency_key: newKey() });
    $("run").disabled = true;
    try {
      const a = await api("POST", "/v1/datasets/" + encodeURIComponent(current.name) + "/query", body);
      showAnswer(a);
    } catch (e) {
      showError(e, sql);
    } finally {
      $("run").disabled = false;
    }
    try { await refresh(); } catch (e) { /* shown on the next action */ }
  });
  $("key-form").addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const datasets = [...$("key-datasets").querySelectorAll("input:checked")].map((x) => x.value);
    const body = { name: $("key-name").value.trim(), role: $("key-role").value, datasets };
    const r = await adminAction("POST", "/v1/keys", "Created key " + body.name + ".", body);
    if (r) {
      const p = $("key-secret");
      p.hidden = false;
      p.textContent = "Key " + r.id + " (" + r.name + "): " + r.key + " — shown only now: it is stored hashed.";
      $("key-name").value = "";
    }
  });
  const grant = (method, verb) => {
    const k = $("grant-key").value, d = $("grant-dataset").value;
    let body;
    if (method === "PUT" && $("grant-eps").value !== "") {
      body = { budget: { epsilon: Number($("grant-eps").value), delta: Number($("grant-delta").value || 0) } };
      verb += " (own budget ε = " + fmt(body.budget.epsilon) + ", δ = " + fmt(body.budget.delta) + ")";
    }
    if (k && d) adminAction(method, "/v1/datasets/" + encodeURIComponent(d) + "/grants/" + encodeURIComponent(k), verb + " " + d + " for " + k + ".", body);
  };
  $("grant-form").addEventListener("submit", (ev) => { ev.preventDefault(); grant("PUT", "Granted"); });
  $("grant-remove").addEventListener("click", () => grant("DELETE", "Revoked the grant of"));
  start();
});
