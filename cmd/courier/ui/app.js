// The operator page: applications, an application's endpoints with their
// health, and an endpoint's attempts and dead letters, with Replay and
// Enable. Every figure comes from courier's JSON API, called with the
// token the operator enters; the token is kept in this tab's
// sessionStorage only and sent as the bearer, never in a URL. Everything
// the API returns is shown as text (textContent), never parsed as HTML.
// The view is named by the URL's hash: #/, #/apps/APP,
// #/apps/APP/endpoints/ENDPOINT.
"use strict";

const tokenKey = "courier.token";
const $ = (id) => document.getElementById(id);

function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
  for (const c of children) e.append(c === null || c === undefined ? "" : c);
  return e;
}

// api calls the API at path (relative to the site, under which the page
// is /ui/) and returns its JSON, or throws an Error saying what failed:
// the method, path, status and the API's own error text.
async function api(method, path, body) {
  const token = sessionStorage.getItem(tokenKey);
  if (!token) {
    showLogin();
    throw new Error("no API token: enter one above");
  }
  const init = { method, headers: { Authorization: "Bearer " + token }, cache: "no-store", credentials: "omit" };
  if (body !== undefined) {
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  let resp;
  try {
    resp = await fetch(".." + path, init);
  } catch (err) {
    throw new Error(`${method} ${path}: no answer (${err.message})`);
  }
  const text = await resp.text();
  let data = null;
  try { data = JSON.parse(text); } catch { /* not JSON: shown as text below */ }
  if (!resp.ok) {
    if (resp.status === 401) showLogin();
    const why = data && typeof data.error === "string" ? data.error : text.slice(0, 300);
    throw new Error(`${method} ${path}: ${resp.status} ${why}`);
  }
  return data;
}

const seg = encodeURIComponent;

function showError(err) {
  $("error").textContent = err ? String(err.message || err) : "";
  $("error").hidden = !err;
}

function showNotice(text) {
  $("notice").textContent = text || "";
  $("notice").hidden = !text;
}

function showLogin() {
  const has = !!sessionStorage.getItem(tokenKey);
  $("token-state").textContent = has ? "token set for this tab" : "no token yet";
  $("forget").hidden = !has;
}

function when(t) { return t ? t.replace("T", " ").replace(/\.\d+Z$/, "Z") : "—"; }

function table(cls, head, rows) {
  return el("table", { class: cls },
    el("thead", {}, el("tr", {}, ...head.map((h) => el("th", {}, h)))),
    el("tbody", {}, ...rows));
}

function crumbs(...parts) {
  const nav = $("crumbs");
  nav.replaceChildren();
  parts.forEach(([label, href], i) => {
    if (i > 0) nav.append(" / ");
    nav.append(href ? el("a", { href }, label) : el("span", {}, label));
  });
}

// viewOf splits the hash into its decoded parts, refusing a part that
// would not stay one segment of an API path ("", ".", "..").
function viewOf(hash) {
  const raw = hash.replace(/^#\/?/, "");
  if (raw === "") return [];
  const parts = raw.split("/").map((p) => {
    try { return decodeURIComponent(p); } catch { return ""; }
  });
  for (const p of parts) {
    if (p === "" || p === "." || p === "..") throw new Error(`no such view: ${hash}`);
  }
  return parts;
}

// render draws the view the hash names. A later navigation wins: a
// render that finds itself overtaken drops its result.
let generation = 0;

async function render() {
  const gen = ++generation;
  const view = $("view");
  showError(null);
  view.dataset.state = "loading";
  try {
    const parts = viewOf(location.hash);
    let node;
    if (parts.length === 4 && parts[0] === "apps" && parts[2] === "endpoints") {
      node = await endpointView(parts[1], parts[3]);
    } else if (parts.length === 2 && parts[0] === "apps") {
      node = await appView(parts[1]);
    } else {
      node = await appsView();
    }
    if (gen !== generation) return;
    view.replaceChildren(node);
    view.dataset.state = "done";
  } catch (err) {
    if (gen !== generation) return;
    view.replaceChildren();
    view.dataset.state = "error";
    showError(err);
  }
}

// listAll reads every page of a list (data, next_after), up to max items.
async function listAll(path, max) {
  const out = [];
  let after = "";
  for (;;) {
    const sep = path.includes("?") ? "&" : "?";
    const page = await api("GET", path + sep + "limit=100" + (after ? "&after=" + seg(after) : ""));
    out.push(...page.data);
    if (!page.next_after || out.length >= max) return out;
    after = page.next_after;
  }
}

async function appsView() {
  crumbs(["applications"]);
  const apps = await listAll("/v1/apps", 1000);
  if (apps.length === 0) return el("p", { class: "empty" }, "No applications yet (POST /v1/apps).");
  return el("section", {}, el("h2", {}, "Applications"),
    table("apps", ["name", "id", "created"], apps.map((a) =>
      el("tr", { "data-app": a.id },
        el("td", {}, el("a", { href: "#/apps/" + seg(a.id) }, a.name || a.id)),
        el("td", { class: "id" }, a.id),
        el("td", {}, when(a.created_at))))));
}

function healthCell(h) {
  if (!h) return el("td", { class: "unknown" }, "health unknown");
  if (h.enabled) return el("td", { class: "enabled" }, "enabled");
  return el("td", { class: "disabled" }, "disabled" + (h.disabled_reason ? ": " + h.disabled_reason : ""));
}

async function appView(appID) {
  const app = await api("GET", "/v1/apps/" + seg(appID));
  crumbs(["applications", "#/"], [app.name || app.id]);
  const eps = await listAll("/v1/apps/" + seg(appID) + "/endpoints", 1000);
  const healths = await Promise.all(eps.map((e) =>
    api("GET", `/v1/apps/${seg(appID)}/endpoints/${seg(e.id)}/health`).catch(() => null)));
  const section = el("section", {}, el("h2", {}, "Endpoints of ", el("span", { class: "name" }, app.name || app.id)));
  if (eps.length === 0) {
    section.append(el("p", { class: "empty" }, "No endpoints yet."));
    return section;
  }
  section.append(table("endpoints", ["url", "state", "last success", "failing since", "streak", "description"],
    eps.map((e, i) => {
      const h = healths[i];
      return el("tr", { "data-endpoint": e.id },
        el("td", {}, el("a", { href: `#/apps/${seg(appID)}/endpoints/${seg(e.id)}` }, e.url)),
        healthCell(h),
        el("td", {}, when(h && h.last_success_at)),
        el("td", {}, when(h && h.failing_since)),
        el("td", { class: "num" }, h ? String(h.failing_streak) : "—"),
        el("td", {}, e.description));
    })));
  return section;
}

async function endpointView(appID, epID) {
  const base = `/v1/apps/${seg(appID)}/endpoints/${seg(epID)}`;
  const [app, ep, h] = await Promise.all([
    api("GET", "/v1/apps/" + seg(appID)), api("GET", base), api("GET", base + "/health")]);
  crumbs(["applications", "#/"], [app.name || app.id, "#/apps/" + seg(appID)], [ep.url]);
  const [attempts, dead] = await Promise.all([
    api("GET", base + "/attempts?limit=50"),
    api("GET", `/v1/streams/${seg(ep.stream)}/dead?limit=100`)]);

  const health = el("section", { id: "health", "data-enabled": String(h.enabled) },
    el("h2", {}, "Endpoint ", el("span", { class: "name" }, ep.url)),
    el("dl", {},
      el("dt", {}, "id"), el("dd", { class: "id" }, ep.id),
      el("dt", {}, "stream"), el("dd", { class: "id" }, ep.stream),
      el("dt", {}, "state"), el("dd", { id: "state", class: h.enabled ? "enabled" : "disabled" },
        h.enabled ? "enabled" : "disabled" + (h.disabled_reason ? ": " + h.disabled_reason : "")),
      el("dt", {}, "disabled at"), el("dd", {}, when(h.disabled_at)),
      el("dt", {}, "last attempt"), el("dd", {}, when(h.last_attempt_at)),
      el("dt", {}, "last success"), el("dd", {}, when(h.last_success_at)),
      el("dt", {}, "failing since"), el("dd", {}, when(h.failing_since)),
      el("dt", {}, "failing streak"), el("dd", {}, String(h.failing_streak)),
      el("dt", {}, "successes / failures"), el("dd", {}, `${h.successes} / ${h.failures}`)));
  const refresh = el("button", { id: "refresh", type: "button" }, "refresh");
  refresh.addEventListener("click", () => { showNotice(null); render(); });
  const actions = el("p", { class: "actions" }, refresh);
  if (!h.enabled) {
    const enable = el("button", { id: "enable", type: "button" }, "Enable");
    enable.addEventListener("click", () => act(enable, "PATCH", base, { enabled: true },
      () => "Endpoint enabled: its stream resumes and its failing streak is cleared."));
    actions.append(" ", enable);
  }
  health.append(actions);

  const attemptRows = attempts.data.map((a) =>
    el("tr", { "data-attempt": a.id, "data-outcome": a.outcome },
      el("td", {}, when(a.at)),
      el("td", { class: "id" }, a.delivery_id),
      el("td", { class: "num" }, String(a.attempt)),
      el("td", { class: "num status" }, a.status ? String(a.status) : "—"),
      el("td", { class: "outcome" }, a.outcome),
      el("td", { class: "num" }, a.duration_ms.toFixed(1) + " ms"),
      el("td", {}, a.detail || ""),
      el("td", {}, el("pre", { class: "body" }, a.response_body))));
  const attemptsSec = el("section", { id: "attempts" }, el("h3", {}, "Recent attempts, newest first"),
    attemptRows.length ? table("attempts", ["at", "delivery", "#", "status", "outcome", "took", "detail", "response body"], attemptRows)
      : el("p", { class: "empty" }, "No attempts yet."));

  const deadRows = dead.dead.map((d) => {
    const replay = el("button", { type: "button", class: "replay", "data-id": d.id }, "Replay");
    replay.addEventListener("click", () => act(replay, "POST", `/v1/events/${seg(d.id)}/replay`, undefined,
      (r) => `Replayed ${r.id}: ${r.state}` + (h.enabled ? "." : "; the endpoint is disabled, so it waits until enabled.")));
    const last = d.last_outcome;
    return el("tr", { "data-id": d.id },
      el("td", { class: "id" }, d.id),
      el("td", { class: "num" }, String(d.seq)),
      el("td", {}, d.dead_reason || ""),
      el("td", {}, last ? `${last.status || "—"} ${last.detail}` : ""),
      el("td", { class: "num" }, String(d.attempts)),
      el("td", { class: "num" }, String(d.replays)),
      el("td", {}, replay));
  });
  const deadSec = el("section", { id: "dead" }, el("h3", {}, "Dead letters"),
    deadRows.length ? table("dead", ["event", "seq", "reason", "last answer", "attempts", "replays", ""], deadRows)
      : el("p", { class: "empty" }, "No dead letters."));
  if (dead.next_after) deadSec.append(el("p", {}, "More dead letters than shown: page with ?after=" + dead.next_after + " on the API."));

  return el("div", {}, health, attemptsSec, deadSec);
}

// act makes one API call from a button: the button is disabled while it
// runs; success shows say(answer) and redraws the view; failure shows
// the API's error.
async function act(button, method, path, body, say) {
  button.disabled = true;
  showNotice(null);
  try {
    const r = await api(method, path, body);
    await render();
    showNotice(say(r));
  } catch (err) {
    showError(err);
    button.disabled = false;
  }
}

function start() {
  $("login").addEventListener("submit", (ev) => {
    ev.preventDefault();
    const t = $("token").value.trim();
    $("token").value = "";
    if (t) sessionStorage.setItem(tokenKey, t);
    showLogin();
    showNotice(null);
    render();
  });
  $("forget").addEventListener("click", () => {
    sessionStorage.removeItem(tokenKey);
    showLogin();
    showNotice(null);
    $("view").replaceChildren();
    $("view").dataset.state = "empty";
  });
  window.addEventListener("hashchange", () => { showNotice(null); render(); });
  showLogin();
  if (sessionStorage.getItem(tokenKey)) render();
}

start();
