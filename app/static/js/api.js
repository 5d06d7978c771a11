// Talking to the service: JSON calls and file uploads that carry the API key when one is set,
// and following a run's event stream (EventSource without a key; a fetch-based reader that can
// send the key).

const KEY_ITEM = "plantree.apiKey";
const RETRY_MS = 1000; // re-join delay after a dropped stream, unless the server sends `retry:`
const MAX_RETRY_MS = 10000;

export class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

// The key lives in sessionStorage: it survives a reload of the tab, not the tab itself.
export const apiKey = () => sessionStorage.getItem(KEY_ITEM);
export const forgetKey = () => sessionStorage.removeItem(KEY_ITEM);

let asking = null;

/** Ask for the key once, however many requests were refused at the same time. */
export function askForKey(reason) {
  asking ??= new Promise((resolve) => {
    const dialog = document.getElementById("key-dialog");
    const input = document.getElementById("key-input");
    document.getElementById("key-reason").textContent = reason;
    input.value = "";
    dialog.addEventListener(
      "close",
      () => {
        if (input.value.trim()) sessionStorage.setItem(KEY_ITEM, input.value.trim());
        asking = null;
        document.dispatchEvent(new Event("apikeychange"));
        resolve();
      },
      { once: true },
    );
    dialog.showModal();
  });
  return asking;
}

function authHeaders() {
  const key = apiKey();
  return key ? { Authorization: `Bearer ${key}` } : {};
}

async function refused(status) {
  if (status !== 401) return false;
  const hadKey = apiKey() !== null;
  forgetKey();
  await askForKey(hadKey ? "That key was refused; enter another." : "This service needs an API key.");
  return true;
}

/** A JSON call; on 401 asks for the key and tries again. Resolves to {data, response}. */
export async function api(path, { method = "GET", body } = {}) {
  for (;;) {
    const headers = { Accept: "application/json", ...authHeaders() };
    if (body !== undefined) headers["Content-Type"] = "application/json";
    const response = await fetch(path, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    if (await refused(response.status)) continue;
    const data = await response.json().catch(() => null);
    if (!response.ok) {
      throw new ApiError(response.status, data?.code, data?.message ?? response.statusText);
    }
    return { data, response };
  }
}

/**
 * POST a FormData (files) with XMLHttpRequest, which reports how much of the body was sent:
 * `onProgress(sent, total)`. The key is sent as `api` sends it, and a 401 asks for it and sends
 * again. Resolves to {data, status}; an error answer rejects with its ApiError.
 */
export async function upload(path, form, onProgress) {
  for (;;) {
    const { status, statusText, data } = await new Promise((resolve, reject) => {
      const xhr = new XMLHttpRequest();
      xhr.open("POST", path);
      xhr.responseType = "json";
      xhr.setRequestHeader("Accept", "application/json");
      for (const [name, value] of Object.entries(authHeaders())) xhr.setRequestHeader(name, value);
      xhr.upload.addEventListener("progress", (event) => {
        if (event.lengthComputable) onProgress(event.loaded, event.total);
      });
      xhr.addEventListener("load", () =>
        resolve({ status: xhr.status, statusText: xhr.statusText, data: xhr.response }),
      );
      xhr.addEventListener("error", () =>
        reject(new ApiError(0, null, "the upload did not reach the service")),
      );
      xhr.send(form);
    });
    if (await refused(status)) continue;
    if (status < 200 || status >= 300) throw new ApiError(status, data?.code, data?.message ?? statusText);
    return { data, status };
  }
}

/**
 * Follow a run's events: `onEvent(event, id)` for each one, in order and once each (a re-join
 * asks for the events after the last id seen); `onState(text)` for the connection's state.
 * Stops after the terminal event. Returns {close()}.
 */
export function follow(runId, { onEvent, onState, isTerminal }) {
  const url = `/runs/${encodeURIComponent(runId)}/events`;
  let lastId = 0;
  let closed = false;
  let current = null;

  const deliver = (id, data) => {
    if (id <= lastId) return false; // already seen (a re-join never repeats, but be sure)
    lastId = id;
    const event = JSON.parse(data);
    onEvent(event, id);
    return isTerminal(event);
  };

  const start = () => {
    if (closed) return;
    current = apiKey() ? readWithFetch() : readWithEventSource();
  };

  // EventSource re-joins by itself with Last-Event-ID; it cannot send a header, so it is only
  // used when no key is needed. A refused or missing stream closes it for good: ask why.
  const readWithEventSource = () => {
    const source = new EventSource(lastId ? `${url}?after=${lastId}` : url);
    const listener = (message) => {
      if (deliver(Number(message.lastEventId), message.data)) stop();
    };
    for (const type of EVENT_TYPES) {
      if (type !== "error") source.addEventListener(type, listener);
    }
    source.onopen = () => onState("live");
    // The run's `error` event and the connection's error share a name: tell them apart.
    source.onerror = (event) => {
      if (event instanceof MessageEvent) {
        listener(event);
        return;
      }
      if (source.readyState === EventSource.CONNECTING) {
        onState("reconnecting…");
        return;
      }
      source.close();
      diagnose();
    };
    const stop = () => source.close();
    return { stop };
  };

  // A fetch-based reader: sends the key as a header and re-joins with Last-Event-ID itself.
  const readWithFetch = () => {
    const abort = new AbortController();
    (async () => {
      let retryMs = RETRY_MS;
      while (!closed && !abort.signal.aborted) {
        try {
          const headers = { Accept: "text/event-stream", ...authHeaders() };
          if (lastId) headers["Last-Event-ID"] = String(lastId);
          const response = await fetch(url, { headers, signal: abort.signal, cache: "no-store" });
          if (await refused(response.status)) continue;
          if (!response.ok) {
            const body = await response.json().catch(() => null);
            throw new ApiError(response.status, body?.code, body?.message ?? response.statusText);
          }
          onState("live");
          retryMs = RETRY_MS;
          const ended = await readFrames(response.body, deliver, (ms) => (retryMs = ms));
          if (ended) return;
        } catch (error) {
          if (abort.signal.aborted) return;
          if (error instanceof ApiError) {
            onState(error.message);
            return;
          }
        }
        onState("reconnecting…");
        await new Promise((resolve) => setTimeout(resolve, retryMs));
        retryMs = Math.min(retryMs * 2, MAX_RETRY_MS);
      }
    })();
    return { stop: () => abort.abort() };
  };

  // Why did the stream fail? A 401 asks for the key (then the stream goes on with it); a 404
  // or another error is shown.
  let diagnoseMs = RETRY_MS;
  const diagnose = async () => {
    try {
      await api(`/runs/${encodeURIComponent(runId)}`);
      onState("reconnecting…");
      setTimeout(start, diagnoseMs);
      diagnoseMs = Math.min(diagnoseMs * 2, MAX_RETRY_MS);
    } catch (error) {
      onState(error instanceof ApiError ? error.message : "the service is unreachable");
    }
  };

  start();
  return {
    close() {
      closed = true;
      current?.stop();
    },
  };
}

// Every event type of docs/events.md; EventSource only dispatches named types it listens to.
export const EVENT_TYPES = [
  "run_started",
  "plan",
  "interrupt",
  "plan_reviewed",
  "steered",
  "node_started",
  "tool_call",
  "node_finished",
  "candidates",
  "evaluated",
  "pruned",
  "revived",
  "path_completed",
  "answer_ready",
  "branched",
  "vote",
  "done",
  "error",
  "cancelled",
];

/**
 * Parse a text/event-stream body (the WHATWG rules: `id`, `event`, `data`, `retry` fields,
 * comments, frames ended by a blank line). Calls `deliver(id, data)` per frame; resolves true
 * once `deliver` reports the terminal event, false when the body ends before it.
 */
async function readFrames(body, deliver, setRetry) {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  let id = null;
  let data = [];
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return false;
      buffer += value;
      const lines = buffer.split(/\r\n|\r|\n/);
      buffer = lines.pop(); // an incomplete last line waits for more bytes
      for (const line of lines) {
        if (line === "") {
          if (data.length && id !== null && deliver(Number(id), data.join("\n"))) return true;
          data = [];
          continue;
        }
        if (line.startsWith(":")) continue; // a heartbeat comment
        const colon = line.indexOf(":");
        const field = colon < 0 ? line : line.slice(0, colon);
        const text = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
        if (field === "id") id = text;
        else if (field === "data") data.push(text);
        else if (field === "retry" && /^\d+$/.test(text)) setRetry(Number(text));
      }
    }
  } finally {
    reader.cancel().catch(() => {});
  }
}
