// The Pinnace dashboard: renders /dashboard/api/snapshot, and fetches it again when the
// server-sent events at /dashboard/events say something changed (at most every REFRESH_MS).
"use strict";

const REFRESH_MS = 500;
const USAGE_MS = 5000;
const RESOURCES = ["cpu", "memory", "pods"];
const EVENTS_KEPT = 50;
let refreshTimer = null;
let podTimer = null;
let liveEvents = [];

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs || {})) node.setAttribute(name, value);
  for (const child of children) node.append(child instanceof Node ? child : String(child));
  return node;
}

function amount(resource, value) {
  if (value === null || value === undefined) return "–";
  if (resource === "memory") return (value / 2 ** 30).toFixed(2) + "Gi";
  if (resource === "cpu") return value.toFixed(2);
  return String(value);
}

function percent(part, whole) {
  return whole > 0 ? Math.min(100, (100 * part) / whole) : 0;
}

function resourceBar(resource, r) {
  const bar = el("div", { class: "bar", title: `${resource}: requested ${amount(resource, r.requested)}, used ${amount(resource, r.used)} of ${amount(resource, r.allocatable)}` },
    el("div", { class: "req" + (r.requested > r.allocatable ? " over" : ""), style: `width:${percent(r.requested, r.allocatable)}%` }));
  if (r.used !== null) bar.append(el("div", { class: "used", style: `left:${percent(r.used, r.allocatable)}%` }));
  const label = el("div", { class: "label" },
    `${resource} ${amount(resource, r.requested)} / ${amount(resource, r.allocatable)} (used ${amount(resource, r.used)})`);
  return [label, bar];
}

function podLink(p) {
  return el("a", { href: `#/pods/${p.namespace}/${p.name}` }, `${p.namespace}/${p.name}`);
}

function nodeCard(n) {
  const classes = ["node", n.ready ? "" : "notready", n.unschedulable ? "cordoned" : ""];
  const title = el("h3", {}, n.name);
  if (!n.ready) title.append(el("span", { class: "marker bad" }, "NotReady"));
  for (const p of n.pressures) title.append(el("span", { class: "marker" }, p));
  if (n.unschedulable) title.append(el("span", { class: "marker" }, "cordoned"));
  const card = el("div", { class: classes.join(" ").trim(), "data-node": n.name }, title);
  for (const t of n.taints) card.append(el("div", { class: "taint" }, t));
  for (const resource of RESOURCES) card.append(...resourceBar(resource, n.resources[resource]));
  const pods = el("div", { class: "pods" });
  for (const p of n.pods) {
    const link = el("a", { href: `#/pods/${p.namespace}/${p.name}`, class: `pod ${p.qos}`, title: `${p.namespace}/${p.name} (${p.qos}, ${p.phase})`, "data-pod": `${p.namespace}/${p.name}` });
    pods.append(link);
  }
  card.append(pods);
  return card;
}

function table(target, header, rows) {
  target.replaceChildren(el("tr", {}, ...header.map((h) => el("th", {}, h))));
  for (const [cells, cls] of rows) target.append(el("tr", { class: cls || "" }, ...cells.map((c) => el("td", {}, c))));
}

function renderUtilisation(nodes) {
  const sum = (field, resource) => nodes.reduce((t, n) => t + (n.resources[resource][field] || 0), 0);
  const share = (field) => RESOURCES.map((r) => percent(sum(field, r), sum("allocatable", r)));
  const traces = ["requested", "used"].map((field) => ({ type: "bar", name: field, x: RESOURCES, y: share(field) }));
  Plotly.react("utilisation", traces, { barmode: "group", yaxis: { title: "% of allocatable", range: [0, 100] }, margin: { t: 10 } }, { displayModeBar: false });
}

function renderWorkloads(workloads) {
  const target = document.getElementById("workloads");
  target.replaceChildren();
  for (const [kind, items] of Object.entries(workloads)) {
    if (!items.length) continue;
    const columns = Object.keys(items[0]).filter((c) => c !== "namespace" && c !== "name");
    const t = el("table", { "data-kind": kind });
    table(t, ["name", ...columns], items.map((w) => [[`${w.namespace}/${w.name}`, ...columns.map((c) => w[c])]]));
    target.append(el("h3", {}, kind), t);
  }
}

function renderEvents() {
  table(document.getElementById("events"), ["time", "type", "reason", "object", "message"],
    liveEvents.slice().reverse().map((e) => [[e.time, e.type, e.reason, `${e.namespace}/${e.object}`, e.message], e.type]));
}

function render(snapshot) {
  document.getElementById("nodes").replaceChildren(...snapshot.nodes.map(nodeCard));
  table(document.getElementById("pending"), ["pod", "QoS", "reason", "message"],
    snapshot.pending.map((p) => [[podLink(p), p.qos, p.reason, p.message]]));
  renderWorkloads(snapshot.workloads);
  renderUtilisation(snapshot.nodes);
  liveEvents = snapshot.events;
  renderEvents();
}

async function refresh() {
  refreshTimer = null;
  const response = await fetch("api/snapshot");
  if (response.ok) render(await response.json());
}

function scheduleRefresh() {
  if (refreshTimer === null) refreshTimer = setTimeout(refresh, REFRESH_MS);
}

function onChange(message) {
  if (message.event) {
    liveEvents = liveEvents.filter((e) => !(e.namespace === message.namespace && e.object === message.event.object && e.reason === message.event.reason));
    liveEvents = [...liveEvents, message.event].slice(-EVENTS_KEPT);
    renderEvents();
  }
  scheduleRefresh();
}

function connect() {
  const source = new EventSource("events");
  const status = document.getElementById("status");
  source.onopen = () => { status.textContent = "live"; refresh(); };
  source.onerror = () => { status.textContent = "reconnecting…"; };
  source.onmessage = (e) => onChange(JSON.parse(e.data));
}

// --- a pod's page -------------------------------------------------------------------------

const usageHistory = { t: [], cpu: [], memory: [] };

async function podUsage(namespace, name) {
  const response = await fetch(`api/pods/${namespace}/${name}`);
  if (!response.ok) return;
  const pod = await response.json();
  usageHistory.t.push(new Date());
  usageHistory.cpu.push(pod.used.cpu ?? null);
  usageHistory.memory.push(pod.used.memory ?? null);
  const line = (y, name, axis, dash) => ({ x: usageHistory.t, y, name, yaxis: axis, mode: "lines", line: { dash } });
  const flat = (value) => usageHistory.t.map(() => value ?? null);
  const traces = [
    line(usageHistory.cpu, "cpu used (cores)", "y", "solid"),
    line(flat(pod.requests.cpu), "cpu request", "y", "dot"),
    line(flat(pod.limits.cpu), "cpu limit", "y", "dash"),
    line(usageHistory.memory.map((m) => m && m / 2 ** 20), "memory used (MiB)", "y2", "solid"),
    line(flat(pod.requests.memory && pod.requests.memory / 2 ** 20), "memory request", "y2", "dot"),
    line(flat(pod.limits.memory && pod.limits.memory / 2 ** 20), "memory limit", "y2", "dash"),
  ];
  const layout = { margin: { t: 10 }, yaxis: { title: "cores", rangemode: "tozero" },
    yaxis2: { title: "MiB", overlaying: "y", side: "right", rangemode: "tozero" } };
  document.getElementById("pod-title").textContent = `${namespace}/${name} · ${pod.qos} · ${pod.phase} · ${pod.node || "not bound"}`;
  Plotly.react("pod-usage", traces, layout, { displayModeBar: false });
}

function explanation(data) {
  const box = el("div", {}, el("p", {}, data.message || ""), el("p", {}, `selected: ${data.selected || data.boundTo || "none"}`));
  const rows = data.nodes.map((n) => [[n.name, n.feasible ? "feasible" : "filtered out",
    n.filters.filter((f) => !f.passed).map((f) => `${f.plugin}: ${f.verdict}`).join("; ") || "all filters pass",
    n.scores.map((s) => `${s.plugin} ${s.normalized}×${s.weight}`).join(", "), n.total ?? ""]]);
  const t = el("table", { id: "explain-nodes" });
  table(t, ["node", "verdict", "filters", "scores", "total"], rows);
  box.append(t);
  return box;
}

async function showPod(namespace, name) {
  const target = document.getElementById("pod-explain");
  target.replaceChildren("explaining…");
  const response = await fetch(`/pinnace/scheduler/explain/namespaces/${namespace}/pods/${name}`);
  target.replaceChildren(response.ok ? explanation(await response.json()) : `no explanation (${response.status})`);
  usageHistory.t.length = usageHistory.cpu.length = usageHistory.memory.length = 0;
  await podUsage(namespace, name);
  podTimer = setInterval(() => podUsage(namespace, name), USAGE_MS);
}

function route() {
  clearInterval(podTimer);
  const pod = location.hash.match(/^#\/pods\/([^/]+)\/([^/]+)$/);
  document.getElementById("cluster").hidden = Boolean(pod);
  document.getElementById("pod").hidden = !pod;
  if (pod) showPod(decodeURIComponent(pod[1]), decodeURIComponent(pod[2]));
}

window.addEventListener("hashchange", route);
route();
connect();
