// #/runs/{id}: the live run view. Events stream into the timeline; the side panel shows
// what the run waits for (with the buttons to decide), its counters, budgets and usage.

import { api, follow } from "./api.js";
import { approvalCards } from "./approvals.js";
import { badge, h, replace } from "./dom.js";
import { notify } from "./notice.js";
import { Stats, Timeline } from "./timeline.js";

export async function runView(root, runId, signal) {
  const header = h("div", { class: "row" });
  const timelineEl = h("div", { class: "timeline", "aria-label": "Run events" });
  const waiting = h("div");
  const figures = h("div");
  const streamState = h("span", { class: "muted", role: "status", "aria-live": "polite" });
  replace(
    root,
    h("h1", {}, "Run ", h("span", { class: "mono" }, runId)),
    header,
    h(
      "div",
      { class: "grid" },
      h("section", { class: "panel", "aria-labelledby": "events-title" }, h("h2", { id: "events-title" }, "Events ", streamState), timelineEl),
      h(
        "aside",
        {},
        h("section", { class: "panel", "aria-labelledby": "wait-title" }, h("h2", { id: "wait-title" }, "Waiting for you"), waiting),
        h("section", { class: "panel", "aria-label": "Figures" }, figures),
      ),
    ),
  );

  const stats = new Stats();
  const timeline = new Timeline(timelineEl, stats);
  let last = 0;
  let following = false;
  let base = `/runs/${encodeURIComponent(runId)}`;
  let shown = null; // the run as last read

  const refresh = async () => {
    const run = await api(`/runs/${encodeURIComponent(runId)}`);
    if (following) {
      // A stream started while this was read: the run goes on (what was read is older).
      run.status = "running";
      run.pending = [];
    }
    if (run.session_id) base = await decisionBase(run, base);
    const served = base.startsWith("/sessions/");
    replace(
      header,
      badge(run.status),
      h("span", {}, "agent ", h("strong", {}, run.agent)),
      run.tenant_id ? h("span", { class: "muted" }, `tenant ${run.tenant_id}`) : null,
      run.session_id && served ? h("a", { class: "mono", href: `#/chat/${encodeURIComponent(run.session_id)}` }, `session ${run.session_id}`) : null,
      run.session_id && !served ? h("span", { class: "muted mono" }, `session ${run.session_id}`) : null,
      h("a", { href: `#/runs/${encodeURIComponent(runId)}/trace` }, "Trace"),
      run.status === "running" ? h("button", { type: "button", class: "danger", onclick: () => cancel(runId) }, "Cancel run") : null,
    );
    replace(waiting, approvalCards(run.pending || [], base, () => stream()));
    shown = run;
    drawFigures(figures, stats, run);
    return run;
  };

  const stream = async () => {
    if (following || signal.aborted) return;
    following = true;
    streamState.textContent = "(live)";
    try {
      last = await follow(`/runs/${encodeURIComponent(runId)}/events`, {
        after: last,
        signal,
        onEvent: (event) => {
          timeline.apply(event.data);
          drawFigures(figures, stats, shown);
        },
      });
    } catch (error) {
      notify(error);
    } finally {
      following = false;
      streamState.textContent = "";
    }
    if (signal.aborted) return;
    const run = await refresh();
    if (run.status === "running") await stream(); // resumed meanwhile: follow on
  };

  try {
    await refresh();
  } catch (error) {
    notify(error);
    return;
  }
  await stream();
}

async function decisionBase(run, fallback) {
  // A session's turn waits for the session's decision, not the run's.
  try {
    await api(`/sessions/${encodeURIComponent(run.session_id)}`);
    return `/sessions/${encodeURIComponent(run.session_id)}`;
  } catch {
    return fallback;
  }
}

async function cancel(runId) {
  try {
    await api(`/runs/${encodeURIComponent(runId)}/cancel`, { method: "POST" });
  } catch (error) {
    notify(error);
  }
}

function drawFigures(el, stats, run) {
  const counters = Object.entries(stats.counters).map(([k, v]) => h("tr", {}, h("th", { scope: "row" }, k), h("td", {}, String(v))));
  const models = [...stats.models.entries()].map(([model, r]) =>
    h(
      "tr",
      {},
      h("td", { class: "mono" }, model),
      h("td", {}, String(r.requests)),
      h("td", {}, String(r.prompt)),
      h("td", {}, String(r.completion)),
      h("td", {}, r.cost === null ? "—" : `$${r.cost.toFixed(4)}`),
    ),
  );
  const budgets = [...stats.budgets.entries()].map(([key, b]) =>
    h("tr", {}, h("th", { scope: "row" }, key), h("td", {}, `${b.current ?? "?"} of ${b.max}`)),
  );
  const signals = [...stats.signals.entries()].map(([name, n]) => h("tr", {}, h("td", { class: "mono" }, name), h("td", {}, String(n))));
  const parts = [
    h("h2", {}, "Counters"),
    h("table", { "aria-label": "Counters" }, h("tbody", {}, counters)),
    h("h2", {}, "Usage and cost by model"),
    h(
      "table",
      { "aria-label": "Usage by model" },
      h("thead", {}, h("tr", {}, ["Model", "Calls", "In", "Out", "Cost"].map((t) => h("th", { scope: "col" }, t)))),
      h("tbody", {}, models),
    ),
    h("h2", {}, "Budgets"),
    budgets.length ? h("table", { "aria-label": "Budgets" }, h("tbody", {}, budgets)) : h("p", { class: "muted" }, "No limit checked yet."),
    signals.length ? h("table", { "aria-label": "Governance signals" }, h("tbody", {}, signals)) : null,
  ];
  if (run && run.usage) parts.push(h("p", { class: "muted" }, `Run total: ${run.usage.prompt_tokens || 0} in, ${run.usage.completion_tokens || 0} out`));
  replace(el, parts);
}
