// #/graphs: the served graphs, each drawn as rows of nodes, with a form to start an execution.
// #/executions/{id}: one execution; its nodes change state live from the signal stream.

import { ApiError, api, follow } from "./api.js";
import { badge, field, h, pretty, replace } from "./dom.js";
import { notify } from "./notice.js";

/** The nodes in rows: each row the nodes first reached at that distance from an entry. */
function rows(graph) {
  const depth = new Map(graph.entries.map((key) => [key, 0]));
  const queue = [...graph.entries];
  while (queue.length) {
    const key = queue.shift();
    for (const [source, target] of graph.edges) {
      if (source === key && !depth.has(target)) {
        depth.set(target, depth.get(key) + 1);
        queue.push(target);
      }
    }
  }
  const found = [];
  for (const key of graph.nodes) {
    const at = depth.has(key) ? depth.get(key) : 0;
    (found[at] = found[at] || []).push(key);
  }
  return found.filter(Boolean);
}

/** The diagram: a row per depth, a box per node (its state as text and a class). */
function diagram(graph, states = new Map()) {
  const boxes = new Map();
  const view = h(
    "div",
    { class: "graph", role: "list", "aria-label": `Graph ${graph.key}` },
    rows(graph).map((row) =>
      h(
        "div",
        { class: "graph-row" },
        row.map((key) => {
          const state = h("span", { class: "node-state" }, states.get(key) || "pending");
          const box = h("div", { class: `node node-${states.get(key) || "pending"}`, role: "listitem", "aria-label": `Node ${key}` }, h("strong", {}, key), state);
          boxes.set(key, { box, state });
          return box;
        }),
      ),
    ),
  );
  const edges = graph.edges.map(([source, target]) => `${source} → ${target}`).join(", ");
  const set = (key, value) => {
    const found = boxes.get(key);
    if (!found) return;
    found.box.className = `node node-${value}`;
    found.state.textContent = value;
  };
  return { view: h("div", {}, view, h("p", { class: "muted" }, "Edges: ", edges || "none")), set };
}

export async function graphsView(root) {
  replace(root, h("h1", {}, "Graphs"));
  let graphs;
  try {
    graphs = await api("/graphs");
  } catch (error) {
    if (error instanceof ApiError && error.status === 404) {
      root.append(h("p", { class: "muted" }, "This server serves no graphs."));
      return;
    }
    throw error;
  }
  for (const graph of graphs) {
    const input = h("textarea", { rows: 2, name: "input" }, "");
    const start = async (event) => {
      event.preventDefault();
      let value = null;
      const text = input.value.trim();
      try {
        value = text ? JSON.parse(text) : null;
      } catch {
        value = text; // plain text is a string input
      }
      try {
        const started = await api(`/graphs/${encodeURIComponent(graph.key)}/executions`, { method: "POST", body: { input: value } });
        location.hash = `#/executions/${encodeURIComponent(started.execution_id)}`;
      } catch (error) {
        notify(error);
      }
    };
    const executions = await api(`/graphs/${encodeURIComponent(graph.key)}/executions?limit=10`);
    root.append(
      h(
        "section",
        { class: "panel", "aria-label": `Graph ${graph.key}` },
        h("h2", {}, graph.key),
        diagram(graph).view,
        h("form", { onsubmit: start }, field(`Input of ${graph.key} (JSON or text)`, input), h("button", { type: "submit" }, "Start execution")),
        h(
          "ul",
          { "aria-label": `Executions of ${graph.key}` },
          executions.map((e) => h("li", {}, badge(e.status), " ", h("a", { class: "mono", href: `#/executions/${encodeURIComponent(e.execution_id)}` }, e.execution_id))),
        ),
      ),
    );
  }
}

const STATE = { "node.before": "running", "node.after": "done" };

export async function executionView(root, executionId, signal) {
  const path = `/executions/${encodeURIComponent(executionId)}`;
  const header = h("div", { class: "row" });
  const picture = h("div");
  const waiting = h("div");
  const log = h("ol", { class: "signals", "aria-label": "Signals" });
  replace(
    root,
    h("h1", {}, "Execution ", h("span", { class: "mono" }, executionId)),
    header,
    h("section", { class: "panel", "aria-label": "Graph" }, picture),
    h("section", { class: "panel", "aria-labelledby": "wait-title" }, h("h2", { id: "wait-title" }, "Waiting for you"), waiting),
    h("section", { class: "panel", "aria-label": "Signal log" }, h("h2", {}, "Signals"), log),
  );
  const execution = await api(path);
  const graph = (await api("/graphs")).find((g) => g.key === execution.graph);
  const states = new Map();
  for (const key of Object.keys(execution.finished)) states.set(key.split("@")[0], "done");
  const drawn = diagram(graph, states);
  replace(picture, drawn.view);

  const show = (view) => {
    replace(header, badge(view.status), h("span", {}, "graph ", h("strong", {}, view.graph)), h("a", { href: `#${path}/trace` }, "Trace"), view.output !== null && view.output !== undefined ? h("span", { class: "output" }, "output ", h("code", {}, pretty(view.output))) : null);
    replace(waiting, (view.pending || []).length ? view.pending.map((item) => answerCard(item, path, () => run())) : h("p", { class: "muted" }, "Nothing."));
  };
  show(execution);

  let seen = 0; // the last signal shown: a resume follows on from it
  const run = async () => {
    seen = await follow(`${path}/events`, {
      after: seen,
      signal,
      onEvent: (event) => {
        const data = event.data;
        if (data.ancestry && data.ancestry.length) return; // nested executions: not drawn
        if (event.type in STATE) drawn.set(data.node_key, STATE[event.type]);
        if (event.type === "node.error") drawn.set(data.node_key, data.kind === "suspended" ? "waiting" : "failed");
        if (event.type.startsWith("node.") || event.type.startsWith("graph.")) {
          log.replaceChildren(...log.children, h("li", {}, h("span", { class: "mono" }, `${event.id} ${event.type}`), " ", data.node_key || data.key || ""));
        }
      },
    });
    show(await api(path));
  };
  await run();
}

function answerCard(item, path, resumed) {
  const value = h("input", { type: "text", name: "value", value: '"approved"' });
  const send = async (decision) => {
    try {
      await api(`${path}/resume`, { method: "POST", body: { interrupts: [{ interrupt_id: item.id, decision }] } });
      resumed();
    } catch (error) {
      notify(error);
    }
  };
  const answer = () => {
    let parsed;
    try {
      parsed = JSON.parse(value.value);
    } catch {
      parsed = value.value;
    }
    send({ decision: "result", value: parsed });
  };
  return h(
    "section",
    { class: "card", "aria-label": item.reason || `Waiting: ${item.id}` },
    h("h3", {}, item.reason || item.kind || "A decision"),
    h("p", { class: "muted" }, `node ${item.node} · `, h("span", { class: "mono" }, item.id)),
    item.payload !== undefined ? h("pre", { class: "args" }, pretty(item.payload)) : null,
    field("Answer (JSON)", value),
    h("div", { class: "row" }, h("button", { type: "button", onclick: answer }, "Answer and resume"), h("button", { type: "button", class: "danger", onclick: () => send({ decision: "deny", reason: "Denied in the console." }) }, "Deny")),
  );
}
