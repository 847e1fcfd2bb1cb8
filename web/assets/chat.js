// The resident's chat. The resident's words live only in this page's memory: never in localStorage,
// sessionStorage, cookies or the address. Replies and staff messages come from /messages, in order.
import { ApiError, request, sleep } from "/assets/api.js";

const WAIT_NOTICE_MS = 1000; // after this long without a reply, say one is being prepared
const FIRST_POLL_MS = 400;
const LONGEST_POLL_MS = 5000;
const IDLE_POLL_MS = 5000; // then keep listening for staff messages, more slowly

const view = {
  transcript: document.getElementById("transcript"),
  scroller: document.querySelector(".transcript"),
  status: document.getElementById("status"),
  problem: document.getElementById("problem"),
  problemText: document.getElementById("problem-text"),
  retry: document.getElementById("retry"),
  form: document.getElementById("composer"),
  message: document.getElementById("message"),
  send: document.getElementById("send"),
};

const state = {
  conversationId: null,
  after: 0, // how many messages the transcript shows
  unsent: null, // {text, key}: a send that failed, retried with the same Idempotency-Key
  busy: false,
  retryAction: null,
  pollTimer: null,
};

function appendMessage(kind, who, text) {
  const item = document.createElement("li");
  item.className = kind;
  const label = document.createElement("span");
  label.className = "who";
  label.textContent = who;
  const body = document.createElement("p");
  body.textContent = text;
  item.append(label, body);
  view.transcript.append(item);
  view.scroller.scrollTop = view.scroller.scrollHeight;
}

function showProblem(error, retryAction) {
  const sentence = error instanceof ApiError ? error.message : "Something went wrong; try again.";
  view.problemText.textContent = sentence;
  view.problem.hidden = false;
  state.retryAction = retryAction;
}

function clearProblem() {
  view.problem.hidden = true;
  view.problemText.textContent = "";
  state.retryAction = null;
}

function setStatus(text) {
  if (view.status.textContent !== text) view.status.textContent = text;
}

async function startConversation() {
  clearProblem();
  try {
    const created = await request("POST", "/conversations");
    state.conversationId = created.conversation_id;
    view.send.disabled = false;
    setStatus("");
    await readMessages({ settle: true });
  } catch (error) {
    showProblem(error, startConversation);
  }
}

async function readMessages({ settle }) {
  // Read new messages; with `settle`, keep reading (backing off) until no reply is being prepared.
  const started = Date.now();
  let delay = FIRST_POLL_MS;
  for (;;) {
    const page = await request("GET", `/conversations/${state.conversationId}/messages?after=${state.after}`);
    for (const message of page.messages) {
      if (message.source === "staff") appendMessage("staff", "Staff", message.text);
      else appendMessage("assistant", "Assistant", message.text);
    }
    state.after = page.next_after;
    if (!settle || !page.waiting) {
      setStatus("");
      return;
    }
    if (Date.now() - started >= WAIT_NOTICE_MS) setStatus("A reply is being prepared");
    await sleep(delay);
    if (Date.now() - started >= WAIT_NOTICE_MS) setStatus("A reply is being prepared");
    delay = Math.min(Math.round(delay * 1.6), LONGEST_POLL_MS);
  }
}

function listenForStaff() {
  clearTimeout(state.pollTimer);
  state.pollTimer = setTimeout(async () => {
    if (!state.busy && state.conversationId) {
      try {
        await readMessages({ settle: false });
      } catch {
        // quiet: the next send or the next listen reports a lasting problem
      }
    }
    listenForStaff();
  }, IDLE_POLL_MS);
}

async function send() {
  const text = view.message.value.trim();
  if (!text || state.busy || !state.conversationId) return;
  if (!state.unsent || state.unsent.text !== text) state.unsent = { text, key: crypto.randomUUID() };
  const { key } = state.unsent;
  state.busy = true;
  view.send.disabled = true;
  clearProblem();
  try {
    await request("POST", `/conversations/${state.conversationId}/turns`, {
      body: { text },
      headers: { "Idempotency-Key": key },
    });
  } catch (error) {
    state.busy = false;
    view.send.disabled = false;
    if (error instanceof ApiError && error.code === "ConversationNotFound") {
      // The desk no longer knows this conversation (a local desk restarted, or it expired): start anew.
      showProblem(new ApiError("The desk no longer has this conversation; try again to start a new one."), restart);
    } else {
      showProblem(error, send); // the typed text stays in the box
    }
    return;
  }
  state.unsent = null;
  appendMessage("you", "You", text);
  view.message.value = "";
  try {
    await readMessages({ settle: true });
  } catch (error) {
    showProblem(error, settle);
  } finally {
    state.busy = false;
    view.send.disabled = false;
    view.message.focus();
  }
}

async function restart() {
  state.conversationId = null;
  state.after = 0;
  await startConversation();
  if (state.conversationId) await send();
}

async function settle() {
  clearProblem();
  state.busy = true;
  try {
    await readMessages({ settle: true });
  } catch (error) {
    showProblem(error, settle);
  } finally {
    state.busy = false;
  }
}

view.form.addEventListener("submit", (event) => {
  event.preventDefault();
  send();
});
view.message.addEventListener("keydown", (event) => {
  if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
    event.preventDefault();
    send();
  }
});
view.retry.addEventListener("click", () => {
  if (state.retryAction) state.retryAction();
});

/** The desk's name and introduction come from config.json (its domain pack), so a desk is data. */
async function showDesk() {
  try {
    const response = await fetch("/config.json", { signal: AbortSignal.timeout(8000) });
    const desk = response.ok ? (await response.json()).desk : null;
    if (!desk) return;
    document.getElementById("desk-name").textContent = desk.name;
    document.getElementById("desk-intro").textContent = desk.intro || "";
    document.title = `${desk.name} - chat`;
  } catch {
    // The generic heading stays; the chat works without it.
  }
}

view.send.disabled = true;
setStatus("Connecting to the desk");
showDesk();
startConversation();
listenForStaff();
