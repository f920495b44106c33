// The run list (with search and filters), the form that starts a run, and every pending
// approval of the caller's runs.

import { api } from "./api.js";
import { badge, field, h, replace, when } from "./dom.js";
import { notify } from "./notice.js";

const STATUSES = ["", "running", "awaiting_approval", "completed", "failed", "aborted", "stopped"];

export async function agentOptions() {
  try {
    return await api("/agents");
  } catch (error) {
    notify(error);
    return [];
  }
}

/** #/runs */
export async function runsView(root) {
  const agents = await agentOptions();
  const agentSelect = h("select", { name: "agent" }, agents.map((a) => h("option", { value: a.name }, a.name)));
  const input = h("textarea", { name: "input", rows: "2", required: true, placeholder: "What should the agent do?" });
  const start = h(
    "form",
    {
      class: "row",
      "aria-label": "Start a run",
      onsubmit: async (event) => {
        event.preventDefault();
        try {
          const started = await api("/runs", { method: "POST", body: { agent: agentSelect.value || null, input: input.value } });
          location.hash = `#/runs/${encodeURIComponent(started.run_id)}`;
        } catch (error) {
          notify(error);
        }
      },
    },
    field("Agent", agentSelect),
    h("div", { class: "field grow" }, h("label", { for: "run-input" }, "Input"), Object.assign(input, { id: "run-input" })),
    h("button", { type: "submit" }, "Start run"),
  );

  const search = h("input", { type: "search", placeholder: "id, agent, status, session, output…" });
  const status = h("select", {}, STATUSES.map((s) => h("option", { value: s }, s || "any status")));
  const filterAgent = h("select", {}, h("option", { value: "" }, "any agent"), agents.map((a) => h("option", { value: a.name }, a.name)));
  const body = h("tbody");
  const count = h("p", { class: "muted", role: "status", "aria-live": "polite" });
  let runs = [];
  const draw = () => {
    const words = search.value.toLowerCase().split(/\s+/).filter(Boolean);
    const shown = runs.filter((run) => {
      const text = JSON.stringify([run.run_id, run.agent, run.status, run.session_id, run.tenant_id, run.metadata, run.output]).toLowerCase();
      return words.every((w) => text.includes(w));
    });
    replace(body, shown.map(row));
    count.textContent = `${shown.length} of ${runs.length} runs`;
  };
  const load = async () => {
    const query = new URLSearchParams({ limit: "200" });
    if (status.value) query.set("status", status.value);
    if (filterAgent.value) query.set("agent", filterAgent.value);
    try {
      runs = (await api(`/runs?${query}`)).runs;
    } catch (error) {
      notify(error);
      runs = [];
    }
    draw();
  };
  search.addEventListener("input", draw);
  status.addEventListener("change", load);
  filterAgent.addEventListener("change", load);

  replace(
    root,
    h("h1", {}, "Runs"),
    h("section", { class: "panel", "aria-labelledby": "start-title" }, h("h2", { id: "start-title" }, "Start a run"), start),
    h(
      "section",
      { class: "panel", "aria-labelledby": "list-title" },
      h("h2", { id: "list-title" }, "Runs, newest first"),
      h("div", { class: "row", role: "search" }, field("Search", search), field("Status", status), field("Agent", filterAgent), h("button", { type: "button", class: "secondary", onclick: load }, "Refresh")),
      count,
      h("table", {}, h("thead", {}, h("tr", {}, ["Run", "Agent", "Status", "Session", "Started", "Tokens"].map((t) => h("th", { scope: "col" }, t)))), body),
    ),
  );
  await load();
}

function row(run) {
  const usage = run.usage || {};
  const tokens = (usage.prompt_tokens || 0) + (usage.completion_tokens || 0);
  return h(
    "tr",
    {},
    h("td", {}, h("a", { class: "mono", href: `#/runs/${encodeURIComponent(run.run_id)}` }, run.run_id)),
    h("td", {}, run.agent),
    h("td", {}, badge(run.status)),
    h("td", { class: "mono" }, run.session_id || ""),
    h("td", {}, when(run.created_at)),
    h("td", {}, String(tokens)),
  );
}

/** #/approvals */
export async function approvalsView(root) {
  const list = h("tbody");
  replace(
    root,
    h("h1", {}, "Approvals"),
    h(
      "section",
      { class: "panel" },
      h("p", { class: "muted" }, "Every call and budget interrupt your suspended runs wait for. Open a run to decide."),
      h("table", {}, h("thead", {}, h("tr", {}, ["Run", "Kind", "Tool", "Reason"].map((t) => h("th", { scope: "col" }, t)))), list),
    ),
  );
  try {
    const items = await api("/approvals");
    replace(
      list,
      items.map((item) =>
        h(
          "tr",
          {},
          h("td", {}, h("a", { class: "mono", href: `#/runs/${encodeURIComponent(item.run_id)}` }, item.run_id)),
          h("td", {}, item.kind),
          h("td", { class: "mono" }, item.tool_name || ""),
          h("td", {}, item.reason),
        ),
      ),
    );
    if (!items.length) list.append(h("tr", {}, h("td", { colspan: "4", class: "muted" }, "Nothing waits for a decision.")));
  } catch (error) {
    notify(error);
  }
}
