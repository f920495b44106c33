// The console's router: #/runs, #/runs/{id}, #/approvals, #/chat, #/chat/{id}, #/graphs,
// #/executions/{id}, and the traces #/runs/{id}/trace, #/executions/{id}/trace.

import { setToken, token } from "./api.js";
import { chatView } from "./chat.js";
import { executionView, graphsView } from "./graphs.js";
import { clearNotice } from "./notice.js";
import { runView } from "./run.js";
import { approvalsView, runsView } from "./runs.js";
import { traceView } from "./trace.js";

let current = null; // the AbortController of the view on screen (its streams stop with it)

function route() {
  if (current) current.abort();
  current = new AbortController();
  clearNotice();
  const root = document.getElementById("view");
  const [view, id, sub] = (location.hash.replace(/^#\/?/, "") || "runs").split("/").map(decodeURIComponent);
  for (const link of document.querySelectorAll("nav a[data-view]")) {
    if (link.dataset.view === view) link.setAttribute("aria-current", "page");
    else link.removeAttribute("aria-current");
  }
  const signal = current.signal;
  if ((view === "runs" || view === "executions") && id && sub === "trace") return traceView(root, view, id, signal);
  if (view === "runs" && id) return runView(root, id, signal);
  if (view === "approvals") return approvalsView(root);
  if (view === "chat") return chatView(root, id, signal);
  if (view === "graphs") return graphsView(root);
  if (view === "executions" && id) return executionView(root, id, signal);
  return runsView(root);
}

function tokenForm() {
  const form = document.getElementById("token-form");
  const input = document.getElementById("token");
  const state = document.getElementById("token-state");
  const show = () => (state.textContent = token() ? "token set" : "no token");
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    setToken(input.value.trim());
    input.value = "";
    show();
    route();
  });
  show();
}

tokenForm();
window.addEventListener("hashchange", route);
route();
