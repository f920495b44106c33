// #/chat and #/chat/{id}: sessions. The transcript streams in; while a turn runs a message
// can steer it (joins before its next model call) or be queued (after the turn).

import { api, follow } from "./api.js";
import { approvalCards } from "./approvals.js";
import { badge, field, h, pretty, replace } from "./dom.js";
import { notify } from "./notice.js";
import { agentOptions } from "./runs.js";

export async function chatView(root, sessionId, signal) {
  const list = h("ul", { class: "sessions", "aria-label": "Sessions" });
  const pane = h("section", { class: "panel", "aria-label": "Conversation" });
  const agents = await agentOptions();
  const agentSelect = h("select", {}, agents.map((a) => h("option", { value: a.name }, a.name)));
  const create = h(
    "form",
    {
      "aria-label": "New session",
      onsubmit: async (event) => {
        event.preventDefault();
        try {
          const made = await api("/sessions", { method: "POST", body: { agent: agentSelect.value || null } });
          location.hash = `#/chat/${encodeURIComponent(made.session_id)}`;
        } catch (error) {
          notify(error);
        }
      },
    },
    field("Agent", agentSelect),
    h("button", { type: "submit" }, "New session"),
  );
  replace(root, h("h1", {}, "Chat"), h("div", { class: "chat" }, h("nav", { class: "panel", "aria-label": "Sessions" }, create, list), pane));
  try {
    const { sessions } = await api("/sessions?limit=100");
    replace(
      list,
      sessions.map((s) =>
        h("li", {}, h("a", { href: `#/chat/${encodeURIComponent(s.session_id)}`, "aria-current": s.session_id === sessionId ? "page" : null }, s.session_id)),
      ),
    );
  } catch (error) {
    notify(error);
  }
  if (!sessionId) {
    replace(pane, h("p", { class: "muted" }, "Open a session, or start a new one."));
    return;
  }
  await conversation(pane, sessionId, signal);
}

async function conversation(pane, sessionId, signal) {
  const base = `/sessions/${encodeURIComponent(sessionId)}`;
  const state = h("span", { role: "status", "aria-live": "polite" });
  const transcript = h("div", { class: "transcript", role: "log", "aria-label": "Transcript", "aria-live": "polite" });
  const waiting = h("div");
  const text = h("textarea", { id: "chat-input", rows: "3", placeholder: "Write a message" });
  const runs = h("span", { class: "muted" });
  const send = (mode) => async () => {
    if (!text.value.trim()) return;
    const body = mode ? { text: text.value, mode } : { text: text.value };
    try {
      await api(`${base}/messages`, { method: "POST", body });
      text.value = "";
      stream();
    } catch (error) {
      notify(error);
    }
  };
  const buttons = {
    send: h("button", { type: "button", onclick: send(null) }, "Send"),
    steer: h("button", { type: "button", class: "secondary", onclick: send("steer"), disabled: true }, "Steer"),
    queue: h("button", { type: "button", class: "secondary", onclick: send("queue"), disabled: true }, "Queue"),
  };
  replace(
    pane,
    h("h2", {}, "Session ", h("span", { class: "mono" }, sessionId), " ", state),
    transcript,
    waiting,
    h(
      "form",
      { class: "composer", "aria-label": "Write to the session", onsubmit: (e) => { e.preventDefault(); send(null)(); } },
      h("label", { for: "chat-input" }, "Message"),
      text,
      h(
        "div",
        { class: "actions" },
        buttons.send,
        buttons.steer,
        buttons.queue,
        h("span", { class: "muted" }, "While a turn runs: Steer joins it before its next model call, Queue waits for it to end."),
      ),
      runs,
    ),
  );

  const view = new ChatTranscript(transcript);
  let last = 0;
  let following = false;
  const refresh = async () => {
    const session = await api(base);
    if (following) {
      // A stream started while this was read: the session runs (what was read is older).
      session.status = "running";
      session.pending = [];
    }
    replace(state, badge(session.status));
    const busy = session.status === "running";
    buttons.steer.disabled = !busy;
    buttons.queue.disabled = !busy;
    replace(waiting, session.pending.length ? approvalCards(session.pending, base, () => stream()) : null);
    replace(runs, session.runs.length ? ["Runs: ", session.runs.map((r) => [h("a", { class: "mono", href: `#/runs/${encodeURIComponent(r)}` }, r), " "])] : null);
    return session;
  };
  const stream = async () => {
    if (following || signal.aborted) return;
    following = true;
    replace(state, badge("running"));
    buttons.steer.disabled = false;
    buttons.queue.disabled = false;
    try {
      last = await follow(`${base}/events`, { after: last, signal, onEvent: (e) => view.apply(e.data) });
    } catch (error) {
      notify(error);
    } finally {
      following = false;
    }
    if (signal.aborted) return;
    const session = await refresh();
    if (session.status === "running") await stream();
  };
  try {
    await refresh();
    await stream(); // the whole story so far, from the event log; then live while it runs
  } catch (error) {
    notify(error);
  }
}

/** Session events drawn as chat bubbles, tool calls and results. */
class ChatTranscript {
  constructor(root) {
    this.root = root;
    this.bubble = null;
    this.tools = new Map();
  }

  say(role, content) {
    const body = h("div", { class: "content" }, content);
    const el = h("div", { class: `bubble ${role}` }, h("span", { class: "who" }, role), body);
    this.root.append(el);
    this.root.scrollTop = this.root.scrollHeight;
    return { el, body };
  }

  apply(event) {
    switch (event.type) {
      case "message": {
        const message = event.message || {};
        if (event.role === "user") {
          this.bubble = null;
          this.say("user", textOf(message.content));
        } else if (this.bubble) {
          this.bubble.el.classList.remove("streaming");
          this.last = this.bubble;
          this.bubble = null;
        } else {
          const said = textOf(message.content);
          this.last = said ? this.say("assistant", said) : null;
        }
        return;
      }
      case "text_delta":
        if (!this.bubble) {
          this.bubble = this.say("assistant", "");
          this.bubble.el.classList.add("streaming");
        }
        this.bubble.body.append(event.delta);
        this.root.scrollTop = this.root.scrollHeight;
        return;
      case "run":
        this.root.append(h("div", { class: "turn-run muted" }, event.resumed ? "resumed " : "turn ", h("a", { class: "mono", href: `#/runs/${encodeURIComponent(event.run_id)}` }, event.run_id)));
        return;
      case "tool_call": {
        const status = h("span", {}, badge("running"));
        const result = h("pre", { class: "result", hidden: true });
        const el = h(
          "div",
          { class: "tool", "data-tool-call-id": event.tool_call_id },
          h("header", {}, h("span", { class: "name" }, event.tool_name), status),
          event.arguments ? h("pre", { class: "args" }, pretty(event.arguments)) : null,
          result,
        );
        this.root.append(el);
        this.tools.set(event.tool_call_id, { status, result });
        return;
      }
      case "tool_result": {
        let tool = this.tools.get(event.tool_call_id);
        if (!tool) {
          this.apply({ type: "tool_call", tool_call_id: event.tool_call_id, tool_name: event.tool_name, arguments: null });
          tool = this.tools.get(event.tool_call_id);
        }
        tool.status.replaceChildren(badge(event.is_error ? "error" : "ok"));
        tool.result.hidden = false;
        tool.result.className = event.is_error ? "result note error" : "result";
        tool.result.textContent = event.result;
        return;
      }
      case "approval_requested": {
        const tool = this.tools.get(event.tool_call_id);
        if (tool) tool.status.replaceChildren(badge("approval"));
        return;
      }
      case "interrupt_requested":
        this.root.append(h("div", { class: "note" }, `waiting: ${event.interrupt.reason || "a limit was reached"}`));
        return;
      case "error":
        this.root.append(h("div", { class: event.aborted ? "note" : "note error", role: event.aborted ? null : "alert" }, `${event.error}: ${event.message}`));
        return;
      case "turn_end":
        if (this.bubble) this.bubble.el.classList.remove("streaming");
        this.bubble = null;
        return;
      default:
        return;
    }
  }
}

function textOf(content) {
  if (typeof content === "string") return content;
  if (Array.isArray(content)) return content.map((p) => (typeof p === "string" ? p : p.text || "")).join("");
  return "";
}
