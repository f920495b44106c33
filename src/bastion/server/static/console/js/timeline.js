// A run's events drawn as a timeline: steps with their streamed text and reasoning, tool
// calls with arguments, results and durations, and the runs nested inside a tool call
// (sub-agents: `subagent.event` wraps a child's event with the parent's tool call id).
// Nesting is a tree of scopes, so other nested producers (graph nodes) can add their own.

import { append, badge, h, pretty, seconds } from "./dom.js";

class Scope {
  constructor(root) {
    this.root = root;
    this.step = null;
    this.tools = new Map();
    this.children = new Map();
  }

  stepFor(event) {
    if (!this.step) this.openStep(event.step ?? "", event.model ?? "");
    return this.step;
  }

  openStep(number, model) {
    const reasoningText = h("pre", { class: "reasoning-text" });
    const reasoning = h("details", { class: "reasoning", hidden: true }, h("summary", {}, "Reasoning"), reasoningText);
    const text = h("div", { class: "text" });
    const tools = h("ol", { class: "tools", "aria-label": "Tool calls" });
    const usage = h("span", { class: "usage" });
    const el = h(
      "section",
      { class: "step", "aria-label": `Step ${number}` },
      h("header", {}, h("h3", {}, `Step ${number}`), h("span", { class: "muted mono" }, model), usage),
      reasoning,
      text,
      tools,
    );
    this.root.append(el);
    this.step = { el, reasoning, reasoningText, text, tools, usage };
    return this.step;
  }

  tool(id, name) {
    let tool = this.tools.get(id);
    if (tool) return tool;
    const status = h("span", { class: "tool-status" }, badge("pending"));
    const args = h("pre", { class: "args" });
    const result = h("pre", { class: "result", hidden: true });
    const duration = h("span", { class: "duration" });
    const nested = h("div", { class: "nested" });
    const el = h(
      "li",
      { class: "tool", "data-tool-call-id": id },
      h("header", {}, h("span", { class: "name" }, name || "tool"), status, duration),
      h("div", { class: "label" }, "Arguments"),
      args,
      result,
      nested,
    );
    const step = this.stepFor({});
    step.tools.append(el);
    tool = { el, status, args, result, duration, nested, argsText: "" };
    this.tools.set(id, tool);
    return tool;
  }

  child(toolCallId, agentName) {
    const key = `${toolCallId}`;
    let scope = this.children.get(key);
    if (scope) return scope;
    const root = h("div", { class: "subagent", "aria-label": `Sub-agent ${agentName}` }, h("div", { class: "who" }, `sub-agent ${agentName}`));
    const tool = this.tools.get(toolCallId);
    (tool ? tool.nested : this.root).append(root);
    scope = new Scope(root);
    this.children.set(key, scope);
    return scope;
  }
}

function setStatus(tool, status) {
  tool.status.replaceChildren(badge(status));
}

function showResult(tool, label, text, isError) {
  tool.result.hidden = false;
  tool.result.className = isError ? "result note error" : "result";
  tool.result.replaceChildren(h("span", { class: "label" }, label), "\n", text);
}

/** The figures of a run: usage by model, counters, governance budgets. */
export class Stats {
  constructor() {
    this.models = new Map();
    this.counters = { steps: 0, "tool calls": 0, "tool errors": 0, approvals: 0, retries: 0, "sub-agent events": 0 };
    this.budgets = new Map();
    this.signals = new Map();
  }

  signal(name, data) {
    this.signals.set(name, (this.signals.get(name) || 0) + 1);
    const limit = data.interrupt && typeof data.interrupt === "object" ? data.interrupt : data;
    if (limit.limit_type && typeof limit.max === "number") {
      const key = `${limit.oracle || ""} ${limit.limit_type}${limit.window ? ` (${limit.window})` : ""}`.trim();
      this.budgets.set(key, { current: limit.current, max: limit.max });
    }
  }

  usage(model, usage) {
    const row = this.models.get(model) || { requests: 0, prompt: 0, completion: 0, reasoning: 0, cost: null };
    row.requests += usage.requests || 0;
    row.prompt += usage.prompt_tokens || 0;
    row.completion += usage.completion_tokens || 0;
    row.reasoning += usage.reasoning_tokens || 0;
    if (typeof usage.cost_usd === "number") row.cost = (row.cost || 0) + usage.cost_usd;
    this.models.set(model, row);
  }
}

/** Applies events (the `data` of each SSE message) to a timeline element. */
export class Timeline {
  constructor(root, stats = new Stats()) {
    this.root = root;
    this.scope = new Scope(root);
    this.stats = stats;
    this.output = null;
  }

  apply(event) {
    this.applyIn(this.scope, event, 0);
  }

  applyIn(scope, event, depth) {
    const stats = this.stats;
    switch (event.type) {
      case "subagent.event": {
        stats.counters["sub-agent events"] += 1;
        this.applyIn(scope.child(event.tool_call_id, event.agent_name), event.event, depth + 1);
        return;
      }
      case "agent.start":
        scope.step = null;
        scope.root.append(h("div", { class: "segment" }, event.resumed ? "resumed" : "started", ` · ${event.agent_name} · ${event.model}`));
        return;
      case "step.start":
        scope.openStep(event.step, event.model);
        if (depth === 0) stats.counters.steps += 1;
        return;
      case "reasoning.delta": {
        const step = scope.stepFor(event);
        step.reasoning.hidden = false;
        step.reasoningText.append(event.delta);
        return;
      }
      case "text.delta":
        scope.stepFor(event).text.append(event.delta);
        return;
      case "tool.call.start":
        scope.tool(event.tool_call_id, event.tool_name);
        return;
      case "tool.call.delta": {
        const tool = scope.tool(event.tool_call_id, "");
        tool.argsText += event.args_delta;
        tool.args.textContent = tool.argsText;
        return;
      }
      case "tool.call.end":
      case "tool.execute.start": {
        const tool = scope.tool(event.tool_call_id, event.tool_name);
        tool.args.textContent = pretty(event.arguments);
        if (event.type === "tool.execute.start") {
          setStatus(tool, "running");
          if (depth === 0) stats.counters["tool calls"] += 1;
        }
        return;
      }
      case "tool.execute.progress": {
        const tool = scope.tool(event.tool_call_id, "");
        const total = event.total ? ` / ${event.total}` : "";
        tool.duration.textContent = `${event.current}${total} ${event.message || ""}`;
        return;
      }
      case "tool.execute.partial": {
        const tool = scope.tool(event.tool_call_id, "");
        tool.result.hidden = false;
        tool.result.append(event.content);
        return;
      }
      case "tool.execute.end": {
        const tool = scope.tool(event.tool_call_id, event.tool_name);
        setStatus(tool, "ok");
        tool.duration.textContent = seconds(event.duration);
        showResult(tool, "Result", event.result, false);
        return;
      }
      case "tool.execute.error": {
        const tool = scope.tool(event.tool_call_id, event.tool_name);
        setStatus(tool, "error");
        tool.duration.textContent = seconds(event.duration);
        showResult(tool, `Error (${event.kind})`, event.message, true);
        if (depth === 0) stats.counters["tool errors"] += 1;
        return;
      }
      case "tool.approval.requested": {
        const tool = scope.tool(event.tool_call_id, event.tool_name);
        setStatus(tool, "approval");
        if (event.reason) tool.duration.textContent = event.reason;
        if (depth === 0) stats.counters.approvals += 1;
        return;
      }
      case "tool.approval.resolved": {
        const tool = scope.tool(event.tool_call_id, event.tool_name);
        setStatus(tool, event.granted ? "granted" : "denied");
        tool.duration.textContent = event.reason || "";
        return;
      }
      case "step.end": {
        const step = scope.stepFor(event);
        const usage = event.usage || {};
        step.usage.textContent = `${usage.prompt_tokens || 0} in · ${usage.completion_tokens || 0} out · ${event.finish_reason}`;
        stats.usage(event.model, usage);
        return;
      }
      case "governance.signal":
        stats.signal(event.signal, event.data || {});
        return;
      case "agent.model.retry":
      case "tool.execute.retry":
        if (depth === 0) stats.counters.retries += 1;
        this.note(scope, event);
        return;
      case "agent.error":
        scope.root.append(h("div", { class: "note error", role: "alert" }, `${event.code}: ${event.message}`));
        return;
      case "agent.end":
        scope.step = null;
        if (depth === 0) {
          const output = event.output === null || event.output === undefined ? "" : typeof event.output === "string" ? event.output : pretty(event.output);
          this.output = h("div", { class: "output" }, h("span", { class: "muted" }, "Run "), badge(event.status), h("div", { class: "text final" }, output));
          scope.root.append(this.output);
        } else {
          scope.root.append(h("div", { class: "note" }, `ended ${event.status}`));
        }
        return;
      case "text.complete":
      case "tool.call.incomplete":
        return;
      default:
        this.note(scope, event);
    }
  }

  note(scope, event) {
    const { type, run_id: _r, seq: _s, ...rest } = event;
    append(scope.root, h("div", { class: "note" }, h("span", { class: "mono" }, type), " ", JSON.stringify(rest)));
  }
}
