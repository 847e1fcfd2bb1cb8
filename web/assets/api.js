// Calls to the desk's APIs on this page's own origin. Every failure becomes an ApiError whose message is
// one sentence a person can act on, and whose `retryable` says whether sending it again may work: both
// from the desk's one table of errors (dialogue.errors), which /config.json serves as `errors`, by the
// answer's code, or, for an answer with none of the APIs' codes, by its status (`unreachable`,
// `throttled`, `unavailable`, `failed`). The server's own sentences never repeat what was sent.

export class ApiError extends Error {
  constructor(message, { status = 0, code = "", retryable = false } = {}) {
    super(message);
    this.status = status;
    this.code = code;
    this.retryable = retryable;
  }
}

const TIMEOUT_MS = 8000; // an answer slower than this counts as the desk not answering
const NO_TABLE = "The request did not go through; try again."; // only while /config.json cannot be read

// --- the pages' config, read once -------------------------------------------------------------------

let configRead = null;

/** The pages' /config.json (the desk, the errors' table, the sign-in's endpoints), read once per page. */
export function config() {
  if (!configRead) {
    configRead = fetch("/config.json", { signal: AbortSignal.timeout(TIMEOUT_MS) }).then((response) => {
      if (!response.ok) throw new Error("The page's settings could not be read; reload the page.");
      return response.json();
    });
    configRead.catch(() => {
      configRead = null; // read again next time
    });
  }
  return configRead;
}

config().catch(() => undefined); // read now, so the table is at hand when the desk stops answering

async function errorTable() {
  try {
    const read = await config();
    return read && typeof read.errors === "object" && read.errors ? read.errors : {};
  } catch {
    return {};
  }
}

/** The table's row for an answer: by its code, or for an answer without one of the table's codes, by status. */
async function rowFor(status, code) {
  const table = await errorTable();
  if (code && Object.hasOwn(table, code)) return table[code];
  if (status === 0) return table.unreachable;
  if (status === 429) return table.throttled;
  if (status >= 500) return table.unavailable;
  return null;
}

async function refusal(status, body) {
  const code = body && typeof body.error === "string" ? body.error : "";
  const row = await rowFor(status, code);
  if (row) return new ApiError(row.message, { status, code, retryable: row.retry === true });
  // A code the table does not hold (devstack's own gateway answers): its own sentence, or the table's last.
  const table = await errorTable();
  const message = body && typeof body.message === "string" ? body.message : table.failed?.message || NO_TABLE;
  return new ApiError(message, { status, code, retryable: false });
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
    throw await refusal(0, null);
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
  if (!response.ok) throw await refusal(response.status, answer);
  return answer;
}

export function sleep(ms) {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
