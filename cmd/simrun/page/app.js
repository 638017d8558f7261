// The page's half: load the simulator (sim.wasm, run by Go's wasm_exec.js),
// ask it for a run, and draw the JSON report it returns. Every figure comes
// from the Go code; this file only lays it out. The URL's hash holds the
// last run (#scenario=outage&seed=1 or #swarm=7) so a run can be linked.
"use strict";

const $ = (id) => document.getElementById(id);

function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
  e.append(...children);
  return e;
}

async function load() {
  const ready = new Promise((resolve) => { globalThis.courierReady = resolve; });
  const go = new Go();
  const { instance } = await WebAssembly.instantiateStreaming(fetch("sim.wasm"), go.importObject);
  go.run(instance);
  await ready;
  for (const s of JSON.parse(courier.scenarios())) {
    $("scenario").append(el("option", { value: s.name, "data-why": s.why }, s.name));
  }
  $("build").textContent = "simulator: " + courier.build;
  const linked = fromHash();
  $("scenario").disabled = false;
  $("run").disabled = false;
  $("run").textContent = "run";
  $("scenario").addEventListener("change", showWhy);
  for (const r of document.querySelectorAll("input[name=kind]")) r.addEventListener("change", showKind);
  $("controls").addEventListener("submit", (ev) => { ev.preventDefault(); run(); });
  showKind();
  if (linked) run();
}

function kind() { return document.querySelector("input[name=kind]:checked").value; }

function showKind() {
  $("scenario-field").hidden = kind() !== "scenario";
  showWhy();
}

function showWhy() {
  const opt = $("scenario").selectedOptions[0];
  $("why").textContent = kind() === "scenario"
    ? (opt ? opt.dataset.why : "")
    : "Each swarm seed draws its own world: policy, ordering, workload and fault mix, as simrun sweep does.";
}

// fromHash sets the controls from the link and reports whether it names a
// run the page can start.
function fromHash() {
  const p = new URLSearchParams(location.hash.slice(1));
  if (p.has("swarm")) {
    document.querySelector("input[value=swarm]").checked = true;
    $("seed").value = p.get("swarm");
    return true;
  }
  if (!p.has("scenario")) return false;
  const name = p.get("scenario");
  if (![...$("scenario").options].some((o) => o.value === name)) {
    show({ error: `the link names scenario "${name}", which this simulator does not have; pick one above` });
    return false;
  }
  $("scenario").value = name;
  if (p.has("seed")) $("seed").value = p.get("seed");
  return true;
}

function run() {
  const k = kind(), name = $("scenario").value, seed = $("seed").value.trim();
  $("result").dataset.state = "running";
  $("run").disabled = true;
  $("run").textContent = "running…";
  // Let the browser paint "running…" before the simulator holds the thread.
  setTimeout(() => {
    const rep = JSON.parse(courier.run(k, name, seed));
    history.replaceState(null, "", k === "swarm" ? `#swarm=${seed}` : `#scenario=${name}&seed=${seed}`);
    show(rep);
    $("run").disabled = false;
    $("run").textContent = "run";
  }, 20);
}

function show(rep) {
  $("error").hidden = !rep.error;
  if (rep.error) {
    $("error").textContent = rep.error;
    $("result").dataset.state = "error";
    return;
  }
  $("title").textContent = rep.title;
  $("verdict-text").textContent = `${rep.verdict} · simrun would exit ${rep.exit}`;
  $("verdict").className = rep.exit === 0 ? "ok" : "bad";
  $("hash").textContent = rep.hash;
  $("command").textContent = rep.command;
  const world = [];
  if (rep.faults) world.push(el("dt", {}, "faults"), el("dd", {}, rep.faults));
  world.push(el("dt", {}, "world"), el("dd", {}, rep.world));
  $("world").replaceChildren(...world);

  const rows = rep.invariants.slice();
  if (rep.expectation) rows.push({ ...rep.expectation, expectation: true });
  $("invariants").replaceChildren(...rows.map((r) => {
    const li = el("li", { class: r.held ? "held" : "failed" },
      el("span", { class: "mark" }, r.held ? "✓" : "✗"),
      el("span", { class: "name" }, r.expectation ? "expected: " + r.name : r.name));
    if (r.failures && r.failures.length) {
      const shown = r.failures.slice(0, 5).map((f) => el("li", {}, f));
      if (r.failures.length > 5) shown.push(el("li", {}, `… ${r.failures.length - 5} more`));
      li.append(el("ul", {}, ...shown));
    }
    return li;
  }));

  $("stats").replaceChildren(...rep.stats.map((s) => {
    const dd = el("dd", {}, s.value);
    if (s.note) dd.append(el("small", {}, s.note));
    return el("div", s.bad ? { class: "bad" } : {}, el("dt", {}, s.label), dd);
  }));

  $("legend").innerHTML = rep.legend; // XHTML from package timeline, every text escaped
  $("timeline").innerHTML = rep.svg;
  $("trace-summary").textContent = `trace: ${rep.trace.length} lines`;
  $("trace").textContent = rep.trace.join("\n");
  $("result").dataset.state = "done";
}

load().catch((err) => {
  $("build").textContent = "simulator failed to load: " + err;
  $("run").textContent = "unavailable";
});
