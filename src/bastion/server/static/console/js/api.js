// The server's JSON API and its Server-Sent Event streams, with the bearer token of this
// tab (sessionStorage). Streams are read with fetch (EventSource cannot send a token) and
// resume with Last-Event-ID after a dropped connection.

const KEY = "bastion.token";

export function token() {
  return sessionStorage.getItem(KEY) || "";
}

export function setToken(value) {
  if (value) sessionStorage.setItem(KEY, value);
  else sessionStorage.removeItem(KEY);
}

function headers(extra = {}) {
  const all = { Accept: "application/json", ...extra };
  const bearer = token();
  if (bearer) all.Authorization = `Bearer ${bearer}`;
  return all;
}

/** An error the server answered with (its JSON error body), or a network failure. */
export class ApiError extends Error {
  constructor(status, type, message) {
    super(message);
    this.status = status;
    this.type = type;
  }
}

async function failure(response) {
  let type = "HTTPError";
  let message = `${response.status} ${response.statusText}`;
  try {
    const body = await response.json();
    if (body && body.error) {
      type = body.error.type || type;
      message = body.error.message || message;
    }
  } catch {
    // not JSON: keep the status line
  }
  return new ApiError(response.status, type, message);
}

/** GET (or another method with a JSON body) and the JSON answer. */
export async function api(path, { method = "GET", body } = {}) {
  const init = { method, headers: headers(body === undefined ? {} : { "Content-Type": "application/json" }) };
  if (body !== undefined) init.body = JSON.stringify(body);
  const response = await fetch(path, init);
  if (!response.ok) throw await failure(response);
  return response.status === 204 ? null : response.json();
}

/**
 * Follow an event stream from seq `after`: calls onEvent({id, type, data}) for each event,
 * in order, and resolves when the stream ends (the run or session settled). A dropped
 * connection is resumed with Last-Event-ID (a few times, with a growing pause).
 */
export async function follow(path, { after = 0, onEvent, signal } = {}) {
  let last = after;
  for (let attempt = 0; ; attempt += 1) {
    try {
      const response = await fetch(path, {
        headers: headers({ Accept: "text/event-stream", "Last-Event-ID": String(last) }),
        signal,
      });
      if (!response.ok) throw await failure(response);
      for await (const event of parse(response.body, signal)) {
        last = event.id;
        attempt = 0;
        onEvent(event);
      }
      return last;
    } catch (error) {
      if (signal && signal.aborted) return last;
      if (error instanceof ApiError || attempt >= 4) throw error;
      await new Promise((resolve) => setTimeout(resolve, 250 * 2 ** attempt));
    }
  }
}

async function* parse(body, signal) {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  try {
    while (true) {
      const { value, done } = await reader.read();
      if (done) return;
      buffer += value;
      let end;
      while ((end = buffer.indexOf("\n\n")) >= 0) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        const event = message(block);
        if (event) yield event;
      }
      if (signal && signal.aborted) return;
    }
  } finally {
    reader.releaseLock();
  }
}

function message(block) {
  const fields = {};
  for (const line of block.split("\n")) {
    const colon = line.indexOf(":");
    if (colon <= 0) continue;
    const name = line.slice(0, colon);
    const value = line.slice(colon + 1).replace(/^ /, "");
    fields[name] = name in fields ? `${fields[name]}\n${value}` : value;
  }
  if (!("data" in fields)) return null;
  return { id: Number(fields.id || 0), type: fields.event || "message", data: JSON.parse(fields.data) };
}
