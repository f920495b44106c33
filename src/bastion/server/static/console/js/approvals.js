// Pending approvals and budget interrupts, with approve / deny / raise-budget buttons.
// `base` is the run's or the session's path: /runs/{id} or /sessions/{id}.

import { api } from "./api.js";
import { field, h, pretty, replace } from "./dom.js";
import { notify } from "./notice.js";

/** A card per pending item; onDecided(answer) after each decision is accepted. */
export function approvalCards(items, base, onDecided) {
  if (!items.length) return h("p", { class: "muted" }, "Nothing waits for a decision.");
  return h("div", { class: "approvals" }, items.map((item) => card(item, base, onDecided)));
}

function card(item, base, onDecided) {
  const path = `${base}/approvals/${encodeURIComponent(item.id)}`;
  const reason = h("input", { type: "text", placeholder: "shown to the model", "data-role": "deny-reason" });
  const buttons = [];
  const decide = async (action, body) => {
    buttons.forEach((b) => (b.disabled = true));
    try {
      const answer = await api(`${path}/${action}`, { method: "POST", body });
      replace(status, action === "approve" ? "Approved." : action === "deny" ? "Denied." : "Limit raised.");
      onDecided(answer);
    } catch (error) {
      notify(error);
      buttons.forEach((b) => (b.disabled = false));
    }
  };
  const status = h("span", { role: "status", class: "muted" });
  const title = item.kind === "call" ? `Approve ${item.tool_name}?` : "A budget limit was reached";
  const body = [h("h3", {}, title), h("p", {}, item.reason)];
  if (item.kind === "call") {
    body.push(h("div", { class: "label muted" }, "Arguments"), h("pre", { class: "args" }, pretty(item.arguments || {})));
    const approve = h("button", { type: "button", onclick: () => decide("approve", {}) }, "Approve");
    const deny = h("button", { type: "button", class: "danger", onclick: () => decide("deny", { reason: reason.value || null }) }, "Deny");
    buttons.push(approve, deny);
    body.push(h("div", { class: "actions" }, approve, field("Reason (if denied)", reason), deny, status));
  } else {
    const limit = item.limit || {};
    body.push(h("pre", { class: "args" }, pretty(limit)));
    const max = h("input", { type: "number", min: "0", step: "any", value: suggested(limit), "data-role": "new-limit" });
    const raise = h("button", { type: "button", onclick: () => decide("raise", { max: Number(max.value) }) }, "Raise budget");
    const deny = h("button", { type: "button", class: "danger", onclick: () => decide("deny", { reason: reason.value || null }) }, "Deny");
    buttons.push(raise, deny);
    body.push(h("div", { class: "actions" }, field("New limit", max), raise, field("Reason (if denied)", reason), deny, status));
  }
  return h("section", { class: "approval", "aria-label": title, "data-item": item.id }, body);
}

function suggested(limit) {
  const max = Number(limit.max);
  return Number.isFinite(max) && max > 0 ? String(max * 2) : "";
}
