// #/runs/{id}/trace and #/executions/{id}/trace: the waterfall of a run or a graph
// execution. Each span (run, step, model call, tool call, sub-agent run, graph, node) is a
// row with a bar placed on a shared time axis; a click on a bar shows its attributes.
// The server builds the span tree (GET …/trace); while the run goes on, each event of its
// stream asks for the tree again (at most one fetch in flight), so the bars grow live.

import { api, follow } from "./api.js";
import { badge, h, pretty, replace, seconds } from "./dom.js";
import { notify } from "./notice.js";

const KINDS = { run: "run", step: "step", model: "model call", tool: "tool call", graph: "graph", node: "node" };

export async function traceView(root, base, id, signal) {
  const path = `/${base}/${encodeURIComponent(id)}`;
  const header = h("div", { class: "row" });
  const state = h("span", { class: "muted", role: "status", "aria-live": "polite" });
  const chart = h("div", { class: "waterfall", role: "tree", "aria-label": "Trace" });
  const details = h("div", {}, h("p", { class: "muted" }, "Click a bar to see its attributes."));
  replace(
    root,
    h("h1", {}, "Trace of ", base === "runs" ? "run " : "execution ", h("a", { class: "mono", href: `#${path}` }, id)),
    header,
    h(
      "div",
      { class: "grid" },
      h("section", { class: "panel", "aria-labelledby": "trace-title" }, h("h2", { id: "trace-title" }, "Waterfall ", state), chart),
      h("aside", {}, h("section", { class: "panel", "aria-labelledby": "span-title" }, h("h2", { id: "span-title" }, "Span"), details)),
    ),
  );

  let selected = null; // the id of the span whose attributes are shown
  const select = (span) => {
    selected = span.id;
    for (const bar of chart.querySelectorAll(".bar[aria-pressed]")) bar.setAttribute("aria-pressed", String(bar.dataset.spanId === selected));
    replace(details, spanDetails(span));
  };

  let busy = false;
  let dirty = false; // events came while a fetch was in flight: fetch once more after it
  let latest = null;
  const show = (trace) => {
    replace(header, badge(trace.spans[0] ? trace.spans[0].status : "running"), h("span", { class: "muted" }, `${seconds(trace.duration)} · started ${trace.started_at ? new Date(trace.started_at).toLocaleTimeString() : "—"}`));
    replace(chart, waterfall(trace, select, selected));
    const shown = selected && findSpan(trace.spans, selected);
    if (shown) replace(details, spanDetails(shown));
  };
  const draw = async () => {
    if (busy) {
      dirty = true;
      return latest;
    }
    busy = true;
    try {
      do {
        dirty = false;
        latest = await api(`${path}/trace`);
        if (!signal.aborted) show(latest);
      } while (dirty && !signal.aborted);
    } finally {
      busy = false;
    }
    return latest;
  };

  try {
    const trace = await draw();
    if (!trace || !trace.live) return;
    state.textContent = "(live)";
    await follow(`${path}/events`, { signal, onEvent: () => draw().catch(notify) });
    state.textContent = "";
    if (!signal.aborted) await draw();
  } catch (error) {
    state.textContent = "";
    notify(error);
  }
}

function findSpan(spans, id) {
  for (const span of spans) {
    if (span.id === id) return span;
    const found = findSpan(span.children, id);
    if (found) return found;
  }
  return null;
}

function waterfall(trace, select, selected) {
  const total = Math.max(trace.duration, ...trace.spans.map(spanEnd), 0.001);
  const ticks = [0, 0.25, 0.5, 0.75, 1].map((f) => placed(h("span", { class: "tick" }, seconds(f * total)), { left: `${f * 100}%` }));
  const rows = [h("div", { class: "trace-row axis", "aria-hidden": "true" }, h("span", { class: "label" }, ""), h("span", { class: "track" }, ticks))];
  const walk = (span, depth, until) => {
    rows.push(row(span, depth, total, until, select, selected));
    for (const child of span.children) walk(child, depth + 1, span.end ?? until);
  };
  for (const span of trace.spans) walk(span, 1, total);
  return rows;
}

function spanEnd(span) {
  return Math.max(span.end ?? span.start, ...span.children.map(spanEnd));
}

function row(span, depth, total, until, select, selected) {
  const open = span.end === null;
  const end = open ? Math.max(until, span.start) : span.end;
  const left = (span.start / total) * 100;
  const width = Math.max(((end - span.start) / total) * 100, 0);
  const took = open ? `${seconds(end - span.start)} so far` : seconds(end - span.start);
  const tokens = span.tokens ? `${span.tokens.prompt} in, ${span.tokens.completion} out` : "";
  const label = `${KINDS[span.kind] || span.kind} ${span.name}: ${span.status}, ${took}${tokens ? `, ${tokens} tokens` : ""}`;
  const bar = h(
    "button",
    {
      type: "button",
      class: `bar kind-${span.kind} state-${String(span.status).replace(/[^a-z_]/gi, "")}${open ? " open" : ""}`,
      "data-span-id": span.id,
      "aria-pressed": String(span.id === selected),
      "aria-label": label,
      title: label,
      onclick: () => select(span),
    },
    h("span", { class: "bar-text" }, took),
  );
  placed(bar, { left: `min(${left}%, calc(100% - 4px))`, width: `${width}%` });
  return h(
    "div",
    { class: `trace-row kind-${span.kind}`, role: "treeitem", "aria-level": String(depth), "aria-label": label, "data-depth": String(depth), "data-kind": span.kind },
    placed(
      h(
        "span",
        { class: "label" },
      h("span", { class: "kind" }, KINDS[span.kind] || span.kind),
      " ",
      h("span", { class: "name" }, span.name),
        span.error ? h("span", { class: "error-mark", title: span.error }, " ⚠") : null,
      ),
      { paddingLeft: `${(depth - 1) * 1.1}rem` },
    ),
    h("span", { class: "track" }, bar),
  );
}

/** Set inline styles through the CSSOM (the console's CSP refuses style attributes). */
function placed(el, styles) {
  Object.assign(el.style, styles);
  return el;
}

function spanDetails(span) {
  const rows = [
    ["kind", KINDS[span.kind] || span.kind],
    ["name", span.name],
    ["status", span.status],
    ["start", seconds(span.start)],
    ["duration", span.end === null ? "still open" : seconds(span.end - span.start)],
  ];
  if (span.tokens) {
    rows.push(["tokens", `${span.tokens.prompt} in, ${span.tokens.completion} out`]);
    if (span.tokens.cost_usd !== null && span.tokens.cost_usd !== undefined) rows.push(["cost", `$${span.tokens.cost_usd.toFixed(4)}`]);
  }
  if (span.error) rows.push(["error", span.error]);
  for (const [key, value] of Object.entries(span.attributes)) rows.push([key, value]);
  return h(
    "table",
    { "aria-label": `Attributes of ${span.name}`, class: "attributes" },
    h(
      "tbody",
      {},
      rows.map(([key, value]) => h("tr", {}, h("th", { scope: "row" }, key), h("td", {}, typeof value === "string" && !value.startsWith("{") && !value.startsWith("[") ? value : h("pre", {}, pretty(value))))),
    ),
  );
}
