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
// fixed policy, spent ε out of total ε under the adaptive one.
function gaugeFraction(b) {
  if (b.policy.mode === "fixed" && b.policy.max_queries > 0) return b.releases / b.policy.max_queries;
  return b.total.epsilon > 0 ? Math.min(1, b.spent.epsilon / b.total.epsilon) : 0;
}

// exhausted says whether a budget refuses every further query of the policy's cost.
function exhausted(b) {
  return b.policy.mode === "fixed" ? b.remaining_queries === 0 : gaugeFraction(b) >= 1;
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
  $("eps-label").hidden = d.policy.mode !== "adaptive";
  $("answer").className = "answer";
  $("answer").textContent = "";
  await refresh();
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
  if (b.policy.mode === "fixed") {
    text += b.releases + " of " + b.policy.max_queries + " queries used, " + b.remaining_queries + " left";
    if (b.per_query) text += " (each costs ε = " + fmt(b.per_query.epsilon) + ", δ = " + fmt(b.per_query.delta) + ")";
    text += ".";
  } else {
    text += b.releases + " releases (adaptive policy: each query names its ε).";
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
  const box = $("curve");
  box.replaceChildren();
  const W = 520, H = 300, L = 60, R = 14, T = 12, B = 40;
  const svg = el("svg", { width: W, height: H, viewBox: `0 0 ${W} ${H}`, role: "img", "aria-label": "privacy curve" });
  box.append(svg);
  const pts = c.points.filter((p) => p.delta > 0);
  const xmax = c.points.length ? c.points[c.points.length - 1].epsilon : 1.5 * c.total.epsilon;
  let lo = Math.min(c.total.delta > 0 ? c.total.delta / 100 : 1e-12, ...pts.map((p) => p.delta));
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
    let ans = "";
    if (r.answer) {
      ans = r.answer.result !== null && r.answer.result !== undefined ? fmtValue(r.answer.result)
        : (r.answer.groups || []).map((g) => g.key + ": " + fmtValue(g.value)).join(", ");
    }
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

function showAnswer(a) {
  const box = $("answer");
  box.className = "answer ok";
  box.replaceChildren();
  const v = document.createElement("div");
  v.className = "value";
  v.id = "answer-value";
  if (a.result !== null && a.result !== undefined) {
    v.textContent = fmtValue(a.result);
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
  const ci = a.ci95 ? "; 95% interval [" + a.ci95.map(fmtValue).join(", ") + "]" : "";
  d.textContent = a.mechanism + ", " + scale + ci + "; charged ε = " + fmt(a.charged.epsilon) + ", δ = " + fmt(a.charged.delta) +
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
    const left = b.policy.mode === "fixed" ? b.remaining_queries + " queries" : "ε " + fmt(b.total.epsilon - b.spent.epsilon);
    row(dt, [d.name + (d.demo ? " (demo)" : ""), d.source || "", b.policy.mode + (b.policy.max_queries ? ", " + b.policy.max_queries + " queries" : ""),
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
  const checks = $("key-datasets");
  checks.replaceChildren();
  const gk = $("grant-key"), gd = $("grant-dataset");
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
    const body = { sql, idempotency_key: newKey() };
    if (current.policy.mode === "adaptive") body.epsilon = Number($("eps").value);
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
    if (k && d) adminAction(method, "/v1/datasets/" + encodeURIComponent(d) + "/grants/" + encodeURIComponent(k), verb + " " + d + " for " + k + ".");
  };
  $("grant-form").addEventListener("submit", (ev) => { ev.preventDefault(); grant("PUT", "Granted"); });
  $("grant-remove").addEventListener("click", () => grant("DELETE", "Revoked the grant of"));
  start();
});
