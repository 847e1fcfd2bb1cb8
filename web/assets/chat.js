// The resident's chat. The resident's words live only in this browser tab: never sent anywhere but the
// turn API, never in localStorage, cookies or the address; a message still being typed is kept in the tab's
// sessionStorage (closed with the tab) so a reload does not lose it, and sending clears it. Replies and staff messages come from /messages, in order.
// The conversation's id (not its words) is kept for the tab in sessionStorage, and offered as a link
// (/chat#c=ID: a fragment, which the browser never sends to a server), so a reload or a return finds the
// conversation again and a staff answer still reaches the resident.
// What a failure says, and whether it offers to try again, are the desk's errors' table's (api.js reads it
// from /config.json); this page only chooses, by the code, what the offered action is.
import { ApiError, config, request, sleep } from "/assets/api.js";

const WAIT_NOTICE_MS = 1000; // after this long without a reply, say one is being prepared
const FIRST_POLL_MS = 400;
const LONGEST_POLL_MS = 5000;
const IDLE_POLL_MS = 5000; // then keep listening for staff messages, more slowly
const LONGEST_WAIT_MS = 90000; // past the desk's reply deadline (60 s): stop waiting, say so, free the box
const KEPT = "desk-conversation";
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const MAX_CHARS = 1000;
// Refusals after which sending again can never work: the way on is a new conversation, with the typed text.
const ENDS_CONVERSATION = new Set(["ConversationNotFound", "TurnLimitReached"]);

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
  counter: document.getElementById("counter"),
  reference: document.getElementById("reference"),
  referenceCode: document.getElementById("reference-code"),
  referenceLink: document.getElementById("reference-link"),
  restoredNote: document.getElementById("restored-note"),
  examples: document.getElementById("examples"),
  exampleList: document.getElementById("example-list"),
  contact: document.getElementById("contact"),
  contactForm: document.getElementById("contact-form"),
  contactDetailField: document.getElementById("contact-detail-field"),
  contactDetail: document.getElementById("contact-detail"),
  contactDetailLabel: document.getElementById("contact-detail-label"),
  contactDetailHint: document.getElementById("contact-detail-hint"),
  contactNote: document.getElementById("contact-note"),
  contactNoteLabel: document.getElementById("contact-note-label"),
  contactSend: document.getElementById("contact-send"),
  contactStatus: document.getElementById("contact-status"),
  waiting: document.getElementById("waiting"),
  newStaff: document.getElementById("new-staff"),
};

const state = {
  conversationId: null,
  after: 0, // how many messages the transcript shows
  unsent: null, // {text, key}: a send that failed, retried with the same Idempotency-Key
  busy: false,
  retryAction: null,
  pollTimer: null,
  examples: [],
  fresh: false, // a new conversation in which nothing has been sent yet: the example questions show
  contact: null, // the desk's contact form (config.json): which channel values take a detail, and how
  channel: null, // the channel value whose detail field the form shows
  contactOpened: false, // the form opened itself once, when a channel that takes a detail was chosen
  hours: null, // the desk's hours (config.json): how to say when a person answers, outside them
};
// Whether the resident reads the newest message (the transcript scrolled to its end), as they last scrolled.
let readingNewest = true;

function appendMessage(kind, who, text) {
  const item = document.createElement("li");
  item.className = kind;
  const label = document.createElement("span");
  label.className = "who";
  label.textContent = who;
  const body = document.createElement("p");
  body.dir = "auto"; // Arabic or Hebrew reads right to left, in its own paragraph
  body.textContent = text;
  item.append(label, body);
  // Where the resident reads further up, a staff message shows a cue rather than pulling the page away.
  const readingAbove = !readingNewest;
  view.transcript.append(item);
  if (kind === "staff" && readingAbove) {
    view.newStaff.hidden = false;
    view.newStaff.onclick = () => {
      view.newStaff.hidden = true;
      item.scrollIntoView({ block: "nearest" });
      item.tabIndex = -1;
      item.focus();
    };
    return;
  }
  view.scroller.scrollTop = view.scroller.scrollHeight;
  if (kind === "staff") item.scrollIntoView({ block: "nearest" }); // on a phone, into the page's view too
}

// While a person is to answer (a hand-off, an abstention, a contact left), the chat says so, and when,
// outside the desk's hours; a staff message ends the wait.
function showWaiting(message) {
  if (message.source === "staff") {
    view.waiting.hidden = true;
    view.waiting.textContent = "";
    return;
  }
  if (!message.to_person) return;
  let text = "Waiting for a member of staff to answer here.";
  if (message.next_opening && state.hours) {
    const opening = new Date(message.next_opening).toLocaleString(state.hours.locale, {
      weekday: "long", day: "numeric", month: "long", hour: "numeric", minute: "2-digit", timeZone: state.hours.time_zone,
    });
    text = state.hours.closed_text.replace("{next_opening}", opening);
  }
  view.waiting.textContent = text;
  view.waiting.hidden = false;
}

// The table's sentence, with one action next to it (none where `action` is null).
function showProblem(error, action, actionLabel = "Try again") {
  view.problemText.textContent = error instanceof ApiError ? error.message : "Something went wrong; try again.";
  view.problem.hidden = false;
  view.retry.textContent = actionLabel;
  view.retry.hidden = !action;
  state.retryAction = action;
  view.message.focus(); // back to the box: the typed text is still there, and the action is next to it
}

// `retry`, where the table says sending again may work (and for a fault of this page's own, which may pass).
function retryIf(error, retry) {
  return error instanceof ApiError && !error.retryable ? null : retry;
}

function clearProblem() {
  view.problem.hidden = true;
  view.problemText.textContent = "";
  state.retryAction = null;
}

function setStatus(text) {
  if (view.status.textContent !== text) view.status.textContent = text;
}

function keptConversation() {
  const fromLink = new URLSearchParams(window.location.hash.slice(1)).get("c");
  const candidate = (fromLink || sessionStorage.getItem(KEPT) || "").toLowerCase();
  return UUID.test(candidate) ? candidate : null;
}

function keep(conversationId) {
  sessionStorage.setItem(KEPT, conversationId);
  const link = `${window.location.origin}/chat#c=${conversationId}`;
  view.referenceCode.textContent = conversationId.slice(0, 8);
  view.referenceLink.href = link;
  view.reference.hidden = false;
  if (window.location.hash) window.history.replaceState(null, "", "/chat"); // the id leaves the address bar
}

async function startConversation() {
  clearProblem();
  const kept = keptConversation();
  if (kept && (await restore(kept))) return;
  try {
    const created = await request("POST", "/conversations");
    state.conversationId = created.conversation_id;
    keep(state.conversationId);
    view.send.disabled = false;
    setStatus(kept ? "That conversation is no longer kept; a new one has started." : "");
    greet();
    await readMessages({ settle: true });
    showContactForm();
  } catch (error) {
    showProblem(error, retryIf(error, startConversation));
  }
}

// Back to a kept conversation: its replies and staff messages from the start (never the resident's words).
async function restore(conversationId) {
  state.conversationId = conversationId;
  state.after = 0;
  try {
    await readMessages({ settle: false });
  } catch (error) {
    state.conversationId = null;
    if (error instanceof ApiError && error.status === 404) {
      sessionStorage.removeItem(KEPT);
      return false;
    }
    showProblem(error, retryIf(error, startConversation));
    return true;
  }
  keep(conversationId);
  if (state.after === 0) greet(); // nothing was said yet: the greeting, not "welcome back" over an empty box
  else view.restoredNote.hidden = false;
  restoreDraft();
  view.send.disabled = false;
  setStatus("");
  showContactForm();
  return true;
}

// The first screen: a greeting, and the desk's example questions as buttons that fill the box.
// The greeting is the page's own (class "greeting"), not one of the desk's replies.
function greet() {
  appendMessage("greeting", "Assistant", "Hello. Ask a question, or say what you would like to sign up for.");
  state.fresh = true;
  view.examples.hidden = state.examples.length === 0;
}

function showExamples(examples) {
  state.examples = examples;
  view.exampleList.replaceChildren(
    ...examples.map((text) => {
      const item = document.createElement("li");
      const button = document.createElement("button");
      button.type = "button";
      button.className = "secondary";
      button.textContent = text;
      button.addEventListener("click", () => {
        view.message.value = text;
        countCharacters();
        view.message.focus();
      });
      item.append(button);
      return item;
    }),
  );
  view.examples.hidden = !(state.fresh && examples.length);
}

// No silent cut: a longer paste stays whole in the box, the counter says by how much it is over, and
// Send asks for a shorter message. What is typed is kept for the tab (sessionStorage, never sent or
// stored by the desk) so a reload does not lose it; sending clears it.
function countCharacters() {
  const used = view.message.value.length;
  const over = used - MAX_CHARS;
  view.counter.textContent = over > 0
    ? `${used.toLocaleString("en")} of ${MAX_CHARS.toLocaleString("en")}: ${over.toLocaleString("en")} too many`
    : `${used.toLocaleString("en")} of ${MAX_CHARS.toLocaleString("en")}`;
  view.message.setAttribute("aria-invalid", over > 0 ? "true" : "false");
  if (over > 0) setStatus(`This message is ${over.toLocaleString("en")} characters over the limit of ${MAX_CHARS.toLocaleString("en")}; shorten it or send it in parts.`);
  else if (used === MAX_CHARS) setStatus("That is the most one message can hold; send it, then go on in another.");
  keepDraft();
}

function draftKey() {
  return state.conversationId ? `${KEPT}-draft-${state.conversationId}` : null;
}

function keepDraft() {
  const key = draftKey();
  if (!key) return;
  if (view.message.value) sessionStorage.setItem(key, view.message.value);
  else sessionStorage.removeItem(key);
}

function restoreDraft() {
  const key = draftKey();
  const draft = key ? sessionStorage.getItem(key) : null;
  if (draft && !view.message.value) {
    view.message.value = draft;
    countCharacters();
  }
}

// One read of /messages at a time: an idle poll still in flight when a send reads would ask with the same
// `after`, and the same message would be shown twice. Each read waits for the one before it.
let lastRead = Promise.resolve();

function readMessages(options) {
  const next = lastRead.then(() => readMessagesNow(options));
  lastRead = next.catch(() => undefined);
  return next;
}

async function readMessagesNow({ settle }) {
  // Read new messages; with `settle`, keep reading (backing off) until no reply is being prepared.
  const started = Date.now();
  let delay = FIRST_POLL_MS;
  for (;;) {
    const page = await request("GET", `/conversations/${state.conversationId}/messages?after=${state.after}`);
    for (const message of page.messages) {
      if (message.source === "staff") appendMessage("staff", "Staff", message.text);
      else appendMessage("assistant", "Assistant", message.text);
      showWaiting(message);
    }
    state.after = page.next_after;
    if (!settle || !page.waiting) {
      setStatus("");
      return;
    }
    if (Date.now() - started >= LONGEST_WAIT_MS) {
      // The reply is late past every deadline: the box is free again, and the idle listening shows the
      // reply (or a staff message) when it comes.
      setStatus("The reply is taking longer than it should. It will appear here when it is ready; you can write meanwhile.");
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
  if (!text) {
    setStatus("Type a message first.");
    view.message.focus();
    return;
  }
  if (text.length > MAX_CHARS) {
    setStatus(`This message is ${(text.length - MAX_CHARS).toLocaleString("en")} characters over the limit of ${MAX_CHARS.toLocaleString("en")}; shorten it or send it in parts.`);
    view.message.focus();
    return;
  }
  if (state.busy || !state.conversationId) return;
  state.fresh = false;
  view.examples.hidden = true;
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
    if (error instanceof ApiError && ENDS_CONVERSATION.has(error.code)) {
      showProblem(error, restart, "Start a new conversation");
    } else {
      showProblem(error, retryIf(error, send)); // the typed text stays in the box
    }
    return;
  }
  state.unsent = null;
  appendMessage("you", "You", text);
  view.message.value = "";
  countCharacters();
  try {
    await readMessages({ settle: true });
    showContactForm(); // not awaited: the box is free again as soon as the reply is shown
  } catch (error) {
    showProblem(error, retryIf(error, settle));
  } finally {
    state.busy = false;
    view.send.disabled = false;
    view.message.focus();
  }
}

async function restart() {
  state.conversationId = null;
  state.after = 0;
  sessionStorage.removeItem(KEPT);
  await startConversation();
  if (state.conversationId) await send();
}

async function settle() {
  clearProblem();
  state.busy = true;
  try {
    await readMessages({ settle: true });
  } catch (error) {
    showProblem(error, retryIf(error, settle));
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
view.message.addEventListener("input", countCharacters);
view.scroller.addEventListener("scroll", () => {
  readingNewest = view.scroller.scrollHeight - view.scroller.scrollTop - view.scroller.clientHeight <= 40;
  if (readingNewest) view.newStaff.hidden = true; // read down to it: the cue has done its work
});
// The page around the transcript changes (the contact form opens, a notice appears, the phone turns): a
// resident who was reading the newest message still is.
new ResizeObserver(() => {
  if (readingNewest) view.scroller.scrollTop = view.scroller.scrollHeight;
}).observe(view.scroller);

// The contact form: apart from the chat, for a person. Its field follows the channel the conversation
// chose (the conversation's slots, never the resident's words); it opens itself once when one is chosen.
async function showContactForm() {
  if (!state.contact || !state.conversationId) return;
  view.contact.hidden = false;
  let channel = null;
  try {
    const detail = await request("GET", `/conversations/${state.conversationId}`);
    channel = detail.slots[state.contact.slot] || null;
  } catch {
    return; // the form stays as it was; the next turn tries again
  }
  const field = channel ? state.contact.details[channel] : null;
  if (channel === state.channel) return;
  state.channel = field ? channel : null;
  view.contactDetailField.hidden = !field;
  if (field) {
    view.contactDetailLabel.textContent = field.label;
    // A number gets the phone keypad and autofill; an address the address keyboard and autofill; a postal
    // address plain text with the street address's autofill.
    const input = { number: ["tel", "tel", "tel"], address: ["email", "email", "email"], street: ["text", "street-address", "text"] };
    const [type, autocomplete, inputMode] = input[field.kind] || input.street;
    view.contactDetail.type = type;
    view.contactDetail.autocomplete = autocomplete;
    view.contactDetail.inputMode = inputMode;
    view.contactDetail.maxLength = field.max_chars;
    view.contactDetailHint.textContent = field.hint;
    view.contactDetail.value = "";
    if (!state.contactOpened) {
      state.contactOpened = true;
      view.contact.open = true;
    }
  }
}

async function sendContact() {
  if (!state.conversationId) return;
  const detail = state.channel ? view.contactDetail.value.trim() : "";
  const note = view.contactNote.value.trim();
  if (!detail && !note) {
    view.contactStatus.textContent = state.channel
      ? `Fill in ${view.contactDetailLabel.textContent.toLowerCase()} or a note first.`
      : "Write a note first.";
    (state.channel ? view.contactDetail : view.contactNote).focus();
    return;
  }
  view.contactSend.disabled = true;
  view.contactStatus.textContent = "Sending to staff";
  try {
    const body = {};
    if (detail) body.detail = detail;
    if (note) body.note = note;
    await request("POST", `/conversations/${state.conversationId}/contact`, { body });
  } catch (error) {
    view.contactStatus.textContent = error instanceof ApiError ? error.message : "Something went wrong; try again.";
    view.contactSend.disabled = false;
    (detail ? view.contactDetail : view.contactNote).focus();
    return;
  }
  view.contactDetail.value = "";
  view.contactNote.value = "";
  view.contactSend.disabled = false;
  view.contactStatus.textContent = "Sent to staff. Only they can read it.";
  try {
    await readMessages({ settle: false });
  } catch {
    // the idle listening shows the desk's answer
  }
}

view.contactForm.addEventListener("submit", (event) => {
  event.preventDefault();
  sendContact();
});

/** The desk's name and introduction come from config.json (its domain pack), so a desk is data. */
async function showDesk() {
  try {
    const desk = (await config()).desk;
    if (!desk) return;
    document.getElementById("desk-name").textContent = desk.name;
    document.getElementById("desk-intro").textContent = desk.intro || "";
    if (desk.person_answers) document.getElementById("person-answers").textContent = desk.person_answers;
    document.title = `${desk.name} - chat`;
    showExamples(Array.isArray(desk.examples) ? desk.examples : []);
    if (desk.hours) state.hours = desk.hours;
    if (desk.contact) {
      state.contact = desk.contact;
      view.contactNoteLabel.textContent = desk.contact.note_label;
      document.getElementById("contact-summary").textContent = desk.contact.title;
      view.contactNote.maxLength = desk.contact.note_max_chars;
      await showContactForm();
    }
  } catch {
    // The generic heading stays; the chat works without it.
  }
}

view.send.disabled = true;
setStatus("Connecting to the desk");
showDesk();
startConversation();
listenForStaff();
