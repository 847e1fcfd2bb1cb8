// Calls to the desk's APIs on this page's own origin. Every failure becomes an ApiError whose message is
// one sentence a person can act on; the server's own sentences never repeat what was sent.

export class ApiError extends Error {
  constructor(message, { status = 0, code = "", retryable = false } = {}) {
    super(message);
    this.status = status;
    this.code = code;
    this.retryable = retryable;
  }
}

const RETRY_STATUSES = new Set([409, 429, 500, 502, 503, 504]);
const TIMEOUT_MS = 8000; // an answer slower than this counts as the desk not answering

// Conflicts that only mean "try again": another write to the conversation came first.
const BUSY_CODES = new Set(["ConcurrentTurnConflict", "RetryInProgress"]);

function sentenceFor(status, body) {
  const code = body && typeof body.error === "string" ? body.error : "";
  if (status === 409 && (BUSY_CODES.has(code) || !body || typeof body.message !== "string")) {
    return "The desk was busy with your previous message; try again.";
  }
  // The desk's own cap on worded replies per conversation says how long to wait; a throttle says nothing.
  if (status === 429 && code !== "GeneratedTurnLimitReached") {
    return "Too many messages at once; wait a moment and try again.";
  }
  if (status >= 500) return "The desk is not answering right now; try again in a moment.";
  if (body && typeof body.message === "string") return body.message;
  return "The request did not go through.";
}

export async function request(method, path, { body, headers = {}, token } = {}) {
  const sent = { method, headers: { Accept: "application/json", ...headers } };
  if (body !== undefined) {
    sent.headers["Content-Type"] = "application/json";
    sent.body = JSON.stringify(body);
  }
  if (token) sent.headers.Authorization = `Bearer ${token}`;
  let response;
  try {
    response = await fetch(path, { ...sent, signal: AbortSignal.timeout(TIMEOUT_MS) });
  } catch {
    throw new ApiError("The desk cannot be reached; check your connection and try again.", { retryable: true });
  }
  let answer = null;
  const text = await response.text();
  if (text) {
    try {
      answer = JSON.parse(text);
    } catch {
      answer = null;
    }
  }
  if (!response.ok) {
    throw new ApiError(sentenceFor(response.status, answer), {
      status: response.status,
      code: answer && typeof answer.error === "string" ? answer.error : "",
      retryable: RETRY_STATUSES.has(response.status),
    });
  }
  return answer;
}

export function sleep(ms) {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
