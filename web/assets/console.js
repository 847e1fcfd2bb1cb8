// The staff console: the review and hand-off queues, an item view with claim, release, decision, reply
// and close, and the desk's figures as charts. Every text from the API is set as text, never as markup.
import { beginSignIn, currentToken, finishSignIn, onSignInChange, signOut } from "/assets/auth.js";
import { ApiError, config, request } from "/assets/api.js";
import { agreementChart, decisionsChart, missRateChart } from "/assets/charts.js";

const $ = (id) => document.getElementById(id);
// Held: the resident was shown the fallback (a screen held the draft, or the model hit its cap or never
// ended), so a decision sends them something. Awaiting: the resident saw the reply and the desk drew it
// for a check (a share of the shown replies, at the pack's rate: the rest are never queued).
// In the order people wait: a hand-off is a person waiting for a person; a held reply left them the fallback.
const TABS = {
  // A conversation has one open hand-off; a later ask joins it and brings it to the top (newest ask first).
  handoffs: { title: "Hand-offs", path: "/staff/handoffs", query: "status=open&order=newest&limit=100" },
  held: { title: "Held replies", path: "/staff/reviews", query: "drafted=false&review=pending&order=oldest&limit=100" },
  awaiting: {
    title: "Replies awaiting a check",
    path: "/staff/reviews",
    query: "drafted=true&review=pending&order=oldest&limit=100",
  },
};
const REFRESH_MS = 10000; // counts and lists refresh on their own, backing off when the desk does not answer
const LONGEST_REFRESH_MS = 120000;
// `opened` counts the tabs opened, so a slow start does not reopen a tab over one the person chose since.
// `typed` keeps what the person typed or chose in an item's forms, by the item's path, across redraws.
const state = { config: null, token: null, desk: null, tab: "handoffs", item: null, opened: 0, typed: {}, refreshTimer: null, refreshDelay: REFRESH_MS };

function el(tag, props = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(props)) {
    if (value === null || value === undefined) continue;
    if (name === "text") node.textContent = value;
    else if (name === "class") node.className = value;
    else if (name.startsWith("on")) node.addEventListener(name.slice(2), value);
    else node.setAttribute(name, value);
  }
  node.append(...children.filter((child) => child !== null && child !== undefined));
  return node;
}

// While an item is open, its outcome is said next to its controls; otherwise at the top of the page.
function region(id) {
  const inItem = state.item && !$("item-panel").hidden && $(`item-${id}`);
  return inItem || $(id);
}

function say(text) {
  region("status").textContent = text;
}

// An API's refusal says the desk's errors' table's sentence for its code (api.js, from /config.json): a
// clash with a colleague gets its own words there.
function problem(error) {
  const box = region("problem");
  box.textContent = error instanceof Error ? error.message : String(error);
  box.hidden = false;
}

function clearProblem() {
  for (const id of ["problem", "item-problem"]) {
    const box = $(id);
    if (box) {
      box.hidden = true;
      box.textContent = "";
    }
  }
}

async function api(method, path, body) {
  try {
    return await request(method, path, { body, token: state.token });
  } catch (error) {
    if (error instanceof ApiError && error.status === 401) {
      state.token = null;
      showSignedOut("Your sign-in has ended; sign in again.");
    }
    throw error;
  }
}

// Dates and times as the desk writes them: its locale and time zone (the pack's [hours], from /staff/desk).
function when(iso) {
  if (!iso) return "";
  const desk = state.desk || {};
  const options = { dateStyle: "medium", timeStyle: "short" };
  if (desk.time_zone) options.timeZone = desk.time_zone;
  return new Date(iso).toLocaleString(desk.locale || undefined, options);
}

// Slots and screens as the desk's pack and the screens' table (both from /staff/desk) name them.
function slotsText(slots) {
  return Object.entries(slots).map(([name, value]) => {
    const slot = state.desk.slots.find((known) => known.name === name);
    const shown = slot?.values.find((known) => known.value === value);
    return `${slot ? slot.label : name}: ${shown ? shown.label : value}`;
  }).join(", ");
}

function screenLabel(name) {
  const screen = state.desk?.screens.find((known) => known.name === name);
  return screen ? screen.label : name;
}

// --- signing in -------------------------------------------------------------------------------------

function showSignedOut(message) {
  $("signed-in").hidden = true;
  $("signed-out").hidden = false;
  $("who").textContent = "Not signed in.";
  if (message) say(message);
}

async function showSignedIn() {
  state.desk = await api("GET", "/staff/desk");
  $("desk-title").textContent = `${state.desk.desk}: staff console`;
  document.title = `${state.desk.desk} - staff console`;
  const name = state.desk.staff.name || state.desk.staff.subject;
  $("who").textContent = `Signed in as ${name}.`;
  $("signed-out").hidden = true;
  $("signed-in").hidden = false;
  const opened = state.opened;
  const pages = await refreshCounts();
  // The console opens where people wait: the first tab, in TABS' order, that holds an open item.
  const waiting = Object.keys(TABS).find((tab) => pages[tab].items.length > 0);
  if (state.opened === opened) await openTab(waiting || state.tab);
  scheduleRefresh();
}

// --- queues -----------------------------------------------------------------------------------------

// A tab follows the API's cursors (a filtered page may be short and still have a next one), up to
// MAX_PAGES pages; the badge then says "+" when more remain.
const MAX_PAGES = 5;

async function listOf(tab) {
  const { path, query } = TABS[tab];
  const items = [];
  let cursor = null;
  for (let pages = 0; pages < MAX_PAGES; pages += 1) {
    const after = cursor ? `&cursor=${encodeURIComponent(cursor)}` : "";
    const page = await api("GET", `${path}?${query}${after}`);
    items.push(...page.items);
    cursor = page.next_cursor || null;
    if (!cursor) break;
  }
  return { items, next_cursor: cursor };
}

// Each badge counts the very page its tab lists: one read per queue serves both.
async function refreshCounts() {
  const pages = {};
  for (const tab of Object.keys(TABS)) {
    pages[tab] = await listOf(tab);
    $(`count-${tab}`).textContent = `${pages[tab].items.length}${pages[tab].next_cursor ? "+" : ""}`;
  }
  return pages;
}

async function refreshQueues() {
  const pages = await refreshCounts();
  if (state.tab in TABS && !$("queue-panel").hidden) drawQueue(state.tab, pages[state.tab]);
}

function scheduleRefresh() {
  clearTimeout(state.refreshTimer);
  state.refreshTimer = setTimeout(async () => {
    if (!state.token) return;
    if (document.hidden) {
      scheduleRefresh();
      return;
    }
    try {
      await refreshQueues();
      state.refreshDelay = REFRESH_MS;
    } catch {
      state.refreshDelay = Math.min(state.refreshDelay * 2, LONGEST_REFRESH_MS); // quiet: the next action reports
    }
    scheduleRefresh();
  }, state.refreshDelay);
}

function markTab(tab) {
  for (const button of document.querySelectorAll("[data-tab]")) {
    if (button.dataset.tab === tab) button.setAttribute("aria-current", "page");
    else button.removeAttribute("aria-current");
  }
}

async function openTab(tab) {
  clearProblem();
  state.opened += 1;
  state.tab = tab;
  markTab(tab);
  $("item-panel").hidden = true;
  if (tab === "figures") {
    $("queue-panel").hidden = true;
    $("figures-panel").hidden = false;
    await showFigures();
    return;
  }
  $("figures-panel").hidden = true;
  $("queue-panel").hidden = false;
  await renderQueue(tab);
}

async function renderQueue(tab) {
  $("queue-panel").setAttribute("aria-busy", "true");
  $("queue-heading").textContent = TABS[tab].title;
  // Another tab chosen while this one loaded draws itself, and says when it is done.
  const page = await listOf(tab).finally(() => {
    if (state.tab === tab) $("queue-panel").setAttribute("aria-busy", "false");
  });
  if (state.tab !== tab) return;
  $(`count-${tab}`).textContent = `${page.items.length}${page.next_cursor ? "+" : ""}`;
  drawQueue(tab, page);
}

function age(iso) {
  const minutes = Math.max(0, Math.round((Date.now() - new Date(iso).getTime()) / 60000));
  if (minutes < 1) return "just now";
  if (minutes < 60) return `${minutes} min ago`;
  const hours = Math.round(minutes / 60);
  return hours < 48 ? `${hours} h ago` : `${Math.round(hours / 24)} days ago`;
}

function topicName(name) {
  return name ? name.replaceAll("_", " ") : null;
}

// Why one turn was left to a person, in words: never the action's or the intent's internal name.
function askReason(ask) {
  if (ask.intent === "contact_left") return "left a contact form for staff";
  const why = { refuse: "a request the assistant refused", abstain_hand_off: "no handbook row answers", hand_off: "asked for a person" }[ask.action] || "passed to a person";
  return [why, topicName(ask.topic)].filter(Boolean).join(": ");
}

// Why a hand-off waits: every ask that opened or joined it, each reason once, in the order first asked.
function handoffReason(item) {
  const reasons = [...new Set((item.asks && item.asks.length ? item.asks : [item]).map(askReason))];
  return reasons.join("; ");
}

// Who holds a claim, as a colleague reads it.
function claimHolder(claim) {
  return claim.mine ? "you" : claim.holder || "another member of staff";
}

// A row says what the item is: the conversation's short reference, what it is about, what the resident
// saw, how long it has waited and who holds it.
function rowSummary(tab, item) {
  if (tab === "handoffs") return handoffReason(item);
  const about = actionWords(item);
  return `${about}; the resident saw ${item.fallback_used ? "the fallback" : "this reply"}`;
}

function drawQueue(tab, page) {
  const list = $("queue");
  // A refresh that changes nothing draws nothing, so focus and reading place stay where they are; one
  // that does keeps focus on the same item's button where it is still listed.
  const drawn = JSON.stringify([tab, page.items.map((i) => [i.conversation_id, i.turn_id, i.claim, i.queued_at])]);
  if (list.dataset.drawn === drawn) return;
  list.dataset.drawn = drawn;
  const focused = list.contains(document.activeElement) ? document.activeElement.dataset.item : null;
  list.replaceChildren();
  for (const item of page.items) {
    const reference = item.conversation_id.slice(0, 8);
    const label = `Conversation ${reference}, turn ${item.turn_id}`;
    const claim = item.claim ? `claimed by ${claimHolder(item.claim)}` : "unclaimed";
    const asks = item.asks ? item.asks.length : 1;
    const waited = tab === "handoffs" && asks > 1 ? ` waiting since ${age(item.created_at)}, asked ${asks} times, last ${age(item.queued_at)}` : ` queued ${age(item.queued_at)}`;
    list.append(
      el(
        "li",
        {},
        el(
          "span",
          {},
          el("strong", { text: label }),
          el("span", { class: "summary", text: ` ${rowSummary(tab, item)}` }),
          el("span", { class: "meta", text: `${waited}, ${claim}` }),
        ),
        el("button", {
          type: "button",
          class: "secondary",
          text: "Open",
          "aria-label": `Open ${label}`,
          "data-item": `${item.conversation_id}/${item.turn_id}`,
          onclick: () => openItem(tab, item.conversation_id, item.turn_id),
        }),
      ),
    );
  }
  $("queue-empty").hidden = page.items.length > 0;
  if (focused) list.querySelector(`[data-item="${focused}"]`)?.focus();
}

// --- an item ----------------------------------------------------------------------------------------

function itemPath(tab, conversationId, turnId) {
  const queue = tab === "handoffs" ? "handoffs" : "reviews";
  return `/staff/${queue}/${conversationId}/${turnId}`;
}

// Escape leaves the open item for its queue, focus back on the row it was opened from.
function closeItem() {
  if (!state.item || $("item-panel").hidden) return;
  const { item } = state.item;
  state.item = null;
  $("item-panel").hidden = true;
  const row = document.querySelector(`#queue [data-item="${item.conversation_id}/${item.turn_id}"]`);
  $("queue-heading").tabIndex = -1;
  (row || $("queue-heading")).focus();
  say("Back to the queue.");
}

document.addEventListener("keydown", (event) => {
  if (event.key === "Escape" && !event.defaultPrevented) closeItem();
});

async function openItem(tab, conversationId, turnId) {
  clearProblem();
  const path = itemPath(tab, conversationId, turnId);
  const item = await api("GET", path);
  state.item = { tab, path, item, trail: null };
  state.item.trail = await trailOf(item);
  renderItem();
  $("item-panel").hidden = false;
  $("item-panel").scrollIntoView({ block: "start" });
  $("item-panel").focus();
}

function facts(rows) {
  return el("dl", {}, ...rows.flatMap(([term, value]) => [el("dt", { text: term }), el("dd", { text: String(value) })]));
}

function claimControls() {
  const { item, path } = state.item;
  const mine = item.claim && item.claim.mine;
  const busy = item.claim && !item.claim.mine;
  return el(
    "div",
    { class: "actions" },
    el("button", { type: "button", id: "claim", text: mine ? "Renew claim" : "Claim", disabled: busy ? "" : null, onclick: () => act("POST", `${path}/claim`, undefined, "Claimed: it is yours until the claim expires.", "claim") }),
    mine ? el("button", { type: "button", class: "secondary", id: "release", text: "Release", onclick: () => act("POST", `${path}/release`, undefined, "Released.", "release") }) : null,
  );
}

// What a generated reply was for, in words: "asks for Contact", "reads back the choices", "answers from the
// handbook: fees", never the action's internal name.
function actionWords(item) {
  const asked = (state.desk.slots || []).find((slot) => slot.request_action === item.action);
  if (asked) return `asks for ${asked.label}`;
  if (item.action === "confirm") return "reads back the choices";
  if (item.action === "inform") return ["answers from the handbook", topicName(item.topic)].filter(Boolean).join(": ");
  return item.action.replaceAll("_", " ");
}

function reviewView(item) {
  const claim = item.claim ? (item.claim.mine ? `yours until ${when(item.claim.expires_at)}` : `${claimHolder(item.claim)}'s until ${when(item.claim.expires_at)}`) : "none";
  const passages = item.passages.length
    ? el("ul", {}, ...item.passages.map((p) => el("li", {}, el("strong", { text: `${p.passage_id}: ` }), document.createTextNode(p.text))))
    : el("p", { text: "None: this action uses no handbook row." });
  const fired = item.screens_fired.length
    ? el("ul", {}, ...item.screens_fired.map((name) => el("li", { text: screenLabel(name) })))
    : el("p", { text: "None fired." });
  const parts = [
    el("h2", { id: "item-heading", text: `Reply to turn ${item.turn_id}: ${actionWords(item)}` }),
    facts([
      ["Conversation", item.conversation_id],
      ["The reply", actionWords(item)],
      ["Slots", slotsText(item.slots)],
      ["Queued", when(item.queued_at)],
      ["Review", item.human_review],
      ["Claim", claim],
    ]),
    el("h3", { text: "Handbook rows the prompt used" }),
    passages,
    el("h3", { text: "Draft" }),
    el("blockquote", { text: item.draft ?? "(no draft)" }),
    facts([
      ["Output tokens", item.output_tokens ?? "unknown"],
      ["Ended by EOS", item.ended_by_eos ? "yes" : "no"],
      ["Hit the token cap", item.hit_token_cap ? "yes" : "no"],
    ]),
    el("h3", { text: "Screens fired" }),
    fired,
    el("h3", { text: "Reply shown" }),
    el("blockquote", { text: item.reply_shown ?? "(no longer kept)" }),
  ];
  if (item.human_review === "pending") parts.push(claimControls(), decisionForm(item), recordForm(item));
  parts.push(itemNotices());
  return parts;
}

// The item's own status and problem lines, next to its controls.
function itemNotices() {
  return el(
    "div",
    {},
    el("p", { class: "notice status", role: "status", id: "item-status" }),
    el("div", { class: "notice error", role: "alert", id: "item-problem", hidden: "" }),
  );
}

// Nothing is preselected: Approve and Reject are both a choice. Typing a correction chooses Reject, and a
// correction is never dropped: with Approve chosen, the form asks instead of sending.
function decisionForm(item) {
  const mine = item.claim && item.claim.mine;
  const typed = typedFor(state.item.path);
  const reasons = el(
    "select",
    { id: "reason", name: "reason", onchange: () => { typed.reason = reasons.value; } },
    el("option", { value: "", text: "Choose a reason" }),
    ...state.desk.reason_codes.map((code) => el("option", { value: code, text: code.replaceAll("_", " ") })),
  );
  reasons.value = typed.reason || "";
  const approve = el("input", { type: "radio", name: "decision", id: "decision-approve", value: "approve", onchange: () => { typed.decision = "approve"; } });
  const reject = el("input", { type: "radio", name: "decision", id: "decision-reject", value: "reject", onchange: () => { typed.decision = "reject"; } });
  if (typed.decision === "approve") approve.checked = true;
  if (typed.decision === "reject") reject.checked = true;
  const correction = el("textarea", {
    id: "correction",
    name: "correction",
    rows: "3",
    maxlength: String(state.desk.max_message_chars),
    oninput: () => {
      typed.correction = correction.value;
      if (correction.value.trim() && !reject.checked) {
        approve.checked = false;
        reject.checked = true;
        typed.decision = "reject";
        // Said next to the box being typed in, where the person is looking, not at the foot of the item.
        correctionNote.textContent = "A correction goes with Reject: Reject is now chosen.";
      }
    },
  });
  correction.value = typed.correction || "";
  const correctionNote = el("p", { class: "notice status", "aria-live": "polite", id: "correction-note" });
  const help = item.fallback_used
    ? "The resident was shown the fallback, which promises a person's answer: Approve sends them this draft; Reject needs a correction they will read."
    : "The resident saw this reply. Approve sends nothing more; a correction with Reject is sent to them as a staff message.";
  const form = el(
    "form",
    { onsubmit: (event) => { event.preventDefault(); decide(form); } },
    el(
      "fieldset",
      {},
      el("legend", { text: "Decision" }),
      el("div", {}, approve, el("label", { for: "decision-approve", text: " Approve" })),
      el("div", {}, reject, el("label", { for: "decision-reject", text: " Reject" })),
      el("p", { class: "notice status", id: "decision-help", text: help }),
      el("label", { for: "reason", text: "Reason (for a rejection)" }),
      reasons,
      el("label", { for: "correction", text: item.fallback_used ? "Correction (needed with Reject; sent to the resident as a staff message)" : "Correction (optional; sent to the resident as a staff message)" }),
      correction,
      correctionNote,
      el("div", { class: "actions" }, el("button", { type: "submit", text: "Record decision", disabled: mine ? null : "" })),
      mine ? null : el("p", { class: "notice status", text: "Claim the reply to decide on it." }),
    ),
  );
  return form;
}

// Correcting the record: one slot of the conversation set to one of its values, both as the desk's pack names
// them (/staff/desk). Nothing is preselected, and the values offered are the chosen slot's. The change is
// the conversation's, not this item's: the resident is sent the desk's fixed confirmation of the corrected
// record, and the item stays open for its decision, reply or close.
function recordForm(item) {
  const mine = item.claim && item.claim.mine;
  const typed = typedFor(state.item.path);
  const values = el("select", { id: "record-value", name: "value", onchange: () => { typed.value = values.value; } });
  const slots = el(
    "select",
    { id: "record-slot", name: "slot", onchange: () => { typed.slot = slots.value; typed.value = ""; offer(); } },
    el("option", { value: "", text: "Choose a slot" }),
    ...state.desk.slots.map((slot) => el("option", { value: slot.name, text: slot.label })),
  );
  slots.value = typed.slot || "";
  function offer() {
    const slot = state.desk.slots.find((known) => known.name === slots.value);
    values.replaceChildren(
      el("option", { value: "", text: slot ? "Choose a value" : "Choose a slot first" }),
      ...(slot ? slot.values.map((known) => el("option", { value: known.value, text: known.label })) : []),
    );
    values.value = typed.value || "";
  }
  offer();
  const form = el(
    "form",
    { id: "record-form", onsubmit: (event) => { event.preventDefault(); correctRecord(form); } },
    el(
      "fieldset",
      {},
      el("legend", { text: "Correct the record" }),
      el("p", { class: "notice status", text: "Sets what the conversation's record holds. The resident is sent the desk's confirmation of the corrected record, or its question for a choice still unknown." }),
      el("label", { for: "record-slot", text: "Slot" }),
      slots,
      el("label", { for: "record-value", text: "New value" }),
      values,
      el("div", { class: "actions" }, el("button", { type: "submit", text: "Correct the record", disabled: mine ? null : "" })),
      mine ? null : el("p", { class: "notice status", text: "Claim the item to correct its record." }),
    ),
  );
  return form;
}

async function correctRecord(form) {
  clearProblem();
  const slot = form.querySelector("#record-slot").value;
  const value = form.querySelector("#record-value").value;
  if (!slot || !value) {
    problem(new Error(slot ? "Choose the slot's new value." : "Choose the slot to correct."));
    form.querySelector(slot ? "#record-value" : "#record-slot").focus();
    return;
  }
  const done = `Record corrected: ${slotsText({ [slot]: value })}. The desk tells the resident in the chat.`;
  await act("POST", `${state.item.path}/slots`, { slot, value }, done, "correct");
}

function handoffView(item) {
  const claim = item.claim ? (item.claim.mine ? `yours until ${when(item.claim.expires_at)}` : `${claimHolder(item.claim)}'s until ${when(item.claim.expires_at)}`) : "none";
  const parts = [
    el("h2", { id: "item-heading", text: `Hand-off: ${handoffReason(item)}` }),
    facts([
      ["Conversation", item.conversation_id],
      ["Turn", String(item.turn_id)],
      ["Slots", slotsText(item.slots)],
      ["Injection-like", item.injection_screen ? "yes" : "no"],
      ["Staff-only request", item.privileged_request ? "yes" : "no"],
      ["Status", item.handoff_status],
      ["Waiting since", when(item.created_at)],
      ["Last asked", when(item.queued_at)],
      ["Claim", claim],
    ]),
    el("h3", { id: "asks-heading", text: "What the resident asked a person for" }),
    el(
      "ol",
      { "aria-labelledby": "asks-heading", class: "asks" },
      ...(item.asks || []).map((ask) => el("li", { text: `Turn ${ask.turn_id}, ${when(ask.at)}: ${askReason(ask)}` })),
    ),
  ];
  if (item.contact) parts.push(contactSection(item));
  if (item.handoff_status === "open") {
    const mine = item.claim && item.claim.mine;
    const typed = typedFor(state.item.path);
    const text = el("textarea", { id: "reply-text", name: "text", rows: "3", maxlength: String(state.desk.max_message_chars), oninput: () => { typed.reply = text.value; } });
    text.value = typed.reply || "";
    parts.push(
      claimControls(),
      el(
        "form",
        { onsubmit: (event) => { event.preventDefault(); replyTo(text); } },
        el("label", { for: "reply-text", text: "Reply to the resident" }),
        text,
        el(
          "div",
          { class: "actions" },
          el("button", { type: "submit", text: "Send reply", disabled: mine ? null : "" }),
          el("button", { type: "button", class: "secondary", text: "Close hand-off", disabled: mine ? null : "", onclick: () => act("POST", `${state.item.path}/close`, undefined, "Hand-off closed.", "close") }),
        ),
      ),
      recordForm(item),
    );
  }
  parts.push(itemNotices());
  return parts;
}

// The resident's contact form: that one was left, and (for the claim's holder, each time audited) what
// it says. What it says lives only in this view's memory, and goes when another item is opened.
function contactSection(item) {
  const left = item.contact;
  const what = [left.has_detail ? `a contact detail (${left.channel})` : null, left.has_note ? "a note" : null].filter(Boolean).join(" and ");
  const shown = state.item.contact;
  const mine = item.claim && item.claim.mine;
  const parts = [
    el("h3", { id: "contact-heading", text: "Contact form" }),
    el("p", { text: `The resident left ${what} (${when(left.left_at)}); kept until ${when(left.expires_at)}, or until this hand-off is closed.` }),
  ];
  if (shown) {
    parts.push(facts([
      ["Contact by", shown.channel],
      ["Detail", shown.detail || "none"],
      ["Note for staff", shown.note || "none"],
    ]));
  } else if (item.handoff_status === "open") {
    parts.push(
      el("button", { type: "button", id: "show-contact", class: "secondary", disabled: mine ? null : "", onclick: showContact, text: "Show what the resident left" }),
      mine ? null : el("p", { class: "notice status", text: "Claim the hand-off to see it; each look is recorded in the audit trail." }),
    );
  }
  return el("section", { id: "item-contact", "aria-labelledby": "contact-heading" }, ...parts);
}

async function showContact() {
  clearProblem();
  try {
    state.item.contact = await api("POST", `${state.item.path}/contact`);
  } catch (error) {
    problem(error);
    return;
  }
  await reloadItem();
  say("Shown below the hand-off's details; this look is recorded in the audit trail.");
  const heading = document.getElementById("contact-heading");
  if (heading) {
    heading.tabIndex = -1;
    heading.focus();
  }
}

function typedFor(path) {
  state.typed[path] = state.typed[path] || {};
  return state.typed[path];
}

// Where focus goes after an action: to what the person does next.
function focusAfter(step) {
  const next = {
    claim: ["decision-approve", "reply-text"],
    correct: ["decision-approve", "reply-text"],
    release: ["claim"],
    decide: ["item-heading"],
    reply: ["reply-text"],
    close: ["item-heading"],
  }[step] || ["item-heading"];
  for (const id of next) {
    const target = $(id);
    if (target && !target.disabled) {
      if (id === "item-heading") target.setAttribute("tabindex", "-1");
      target.focus();
      return;
    }
  }
}

function renderItem() {
  const { tab, item } = state.item;
  $("item-panel").replaceChildren(...(tab === "handoffs" ? handoffView(item) : reviewView(item)), seenView(item), trailView());
}

// What the resident was shown, in order: the desk's replies and staff messages (the ones just sent
// included), this item's own reply marked. The resident's own words are never kept, so never shown.
function seenView(item) {
  const seen = item.seen || [];
  const list = el(
    "ol",
    { class: "seen" },
    ...seen.map((message) => {
      const mine = message.source === "assistant" && message.turn_id === item.turn_id;
      const who = message.source === "staff" ? "Staff" : "Assistant";
      return el(
        "li",
        { class: `${message.source}${mine ? " this-item" : ""}` },
        el("span", { class: "who", text: `${who}, ${when(message.at)}${mine ? " (this item)" : ""}: ` }),
        el("span", { dir: "auto", text: message.text }),
      );
    }),
  );
  return el(
    "section",
    { id: "item-seen", "aria-labelledby": "seen-heading" },
    el("h3", { id: "seen-heading", text: "What the resident was shown" }),
    seen.length ? list : el("p", { text: "Nothing yet." }),
    el("p", { class: "notice status", text: "The resident's own messages are not kept, so they are not shown." }),
  );
}

// --- an item's audit trail --------------------------------------------------------------------------

const TRAIL_ACTIONS = {
  claim: "Claimed",
  release: "Released",
  decision: "Decided",
  reply: "Replied to the resident",
  close: "Closed",
  correct_record: "Corrected the record",
};

// The item's trail (GET /staff/audit), or null when it cannot be read now: the item still shows.
async function trailOf(item) {
  const query = `conversation_id=${encodeURIComponent(item.conversation_id)}&turn_id=${encodeURIComponent(item.turn_id)}`;
  try {
    return await api("GET", `/staff/audit?${query}`);
  } catch {
    return null;
  }
}

function trailWho(entry) {
  return entry.mine ? "You" : `Colleague ${entry.staff.slice(0, 8)}`;
}

function trailWhat(entry) {
  const done = TRAIL_ACTIONS[entry.action] || entry.action;
  // A correction's link keeps the slot (as its reason) and the new value (as its outcome): the pack's names.
  if (entry.action === "correct_record" && entry.reason && entry.outcome) return `${done}: ${slotsText({ [entry.reason]: entry.outcome })}`;
  if (entry.action !== "decision" || !entry.outcome) return done;
  return `${done}: ${entry.outcome}${entry.reason ? ` (reason: ${entry.reason.replaceAll("_", " ")})` : ""}`;
}

// What the trail was checked against, in words: `verified` only means the table matched the write-once
// copy (the record); without one, only the chain was checked, which a rewrite of the chain can pass.
function trailVerdict(trail) {
  const checked = trail.checked || { against: "hash_chain_only", problems: 0 };
  if (trail.verified) {
    return { ok: true, text: "Verified against the write-once copy: every step matches its locked copy and is chained to the one before; none was changed, added or removed." };
  }
  if (checked.against === "write_once_copy") {
    return { ok: false, text: "This trail does not match its write-once copy: a step was changed, added or removed after it was recorded. Tell the desk's administrator." };
  }
  const chain = checked.problems ? "and it does not verify" : "which a rewrite of the whole chain could pass";
  return { ok: false, text: `Not verified: this desk has no write-once copy of its trail, so only the steps' chain was checked, ${chain}. Tell the desk's administrator.` };
}

// Who did what to the open item, oldest first, and what its check against the write-once copy found. Text only.
function trailView() {
  const trail = state.item.trail;
  const parts = [el("h3", { id: "trail-heading", text: "Trail" })];
  const verdict = trail && trailVerdict(trail);
  const verdictLine = verdict && el("p", { id: "trail-verified", class: verdict.ok ? "notice" : "notice error", text: verdict.text });
  if (!trail) {
    parts.push(el("p", { text: "The trail could not be read just now; it shows again with the next update." }));
  } else if (!trail.items.length) {
    parts.push(el("p", { text: "No one has acted on this item yet." }));
    if (!verdict.ok) parts.push(verdictLine); // steps recorded once, gone from the table: the copy says so
  } else {
    parts.push(
      el(
        "table",
        { class: "figures trail", id: "trail" },
        el("caption", { class: "visually-hidden", text: "Who did what to this item, oldest first" }),
        el("thead", {}, el("tr", {}, ...["When", "Who", "What"].map((name) => el("th", { scope: "col", text: name })))),
        el(
          "tbody",
          {},
          ...trail.items.map((entry) => el(
            "tr",
            {},
            el("td", {}, entry.at ? el("time", { datetime: entry.at, text: when(entry.at) }) : "unknown"),
            el("td", { text: trailWho(entry) }),
            el("td", { text: trailWhat(entry) }),
          )),
        ),
      ),
      verdictLine,
    );
  }
  return el("section", { id: "item-trail", "aria-labelledby": "trail-heading" }, ...parts);
}

// The item view is drawn again after every action, so its outcome is announced only once the new view
// is in place: a person (or a test) who acts on the announcement never types into a form about to go.
async function act(method, path, body, done, step) {
  clearProblem();
  let succeeded = false;
  let failure = null;
  try {
    await api(method, path, body);
    succeeded = true;
  } catch (error) {
    failure = error;
  }
  if (succeeded && (step === "decide" || step === "reply")) delete state.typed[state.item.path];
  if (succeeded && step === "correct") {
    delete typedFor(state.item.path).slot;
    delete typedFor(state.item.path).value;
  }
  await reloadItem();
  if (succeeded) {
    say(done);
    focusAfter(step);
  } else {
    problem(failure);
  }
}

async function reloadItem() {
  try {
    state.item.item = await api("GET", state.item.path);
    state.item.trail = await trailOf(state.item.item);
    renderItem();
  } catch (error) {
    problem(error);
  }
  await refreshQueues().catch(problem); // one read per queue: the badges, and the open tab's list
}

async function decide(form) {
  clearProblem();
  const chosen = form.querySelector("input[name=decision]:checked");
  const correction = form.querySelector("#correction").value.trim();
  if (!chosen) {
    problem(new Error("Choose Approve or Reject first."));
    form.querySelector("#decision-approve").focus();
    return;
  }
  if (chosen.value === "approve" && correction) {
    problem(new Error("A correction is sent only with Reject: choose Reject to send it, or clear it to approve."));
    form.querySelector("#decision-reject").focus();
    return;
  }
  const body = { decision: chosen.value };
  if (chosen.value === "reject") {
    body.reason = form.querySelector("#reason").value;
    if (!body.reason) {
      problem(new Error("Choose a reason for the rejection."));
      form.querySelector("#reason").focus();
      return;
    }
    if (correction) body.correction = correction;
  }
  const done = chosen.value === "approve"
    ? (state.item.item.fallback_used ? "Approved: the draft is sent to the resident." : "Approved.")
    : (correction ? "Rejected: the correction is sent to the resident." : "Rejected.");
  await act("POST", `${state.item.path}/decision`, body, done, "decide");
}

async function replyTo(textarea) {
  const text = textarea.value.trim();
  if (!text) {
    problem(new Error("Write a reply first."));
    return;
  }
  await act("POST", `${state.item.path}/reply`, { text }, "Reply sent to the resident.", "reply");
}

// --- figures ----------------------------------------------------------------------------------------

async function showFigures() {
  const stats = await api("GET", "/staff/stats");
  const enough = stats.readable_sample;
  $("charts").replaceChildren(
    decisionsChart(stats.decisions_per_day),
    missRateChart(stats.screens_missed, enough),
    agreementChart(stats.screens_overall, stats.screens, screenLabel, enough),
  );
  const share = (value) => (value === null ? "none yet" : `${Math.round(value * 100)}%`);
  const seconds = (value) => (value === null ? "none yet" : `${Math.round(value)} s`);
  // The screens' miss rate from the checked sample of shown replies: a bare percentage only from enough checks.
  const missed = stats.screens_missed;
  const missRate = !missed.checked
    ? "none checked yet"
    : !missed.readable
      ? `too few checked to read: ${missed.rejected} of ${missed.checked} rejected (${enough} checks needed)`
      : `${share(missed.share)} (95% interval ${share(missed.low)} to ${share(missed.high)}), from ${missed.checked} checked`;
  const drawn = stats.shown_check_rate >= 1 ? "every one" : `${share(stats.shown_check_rate)}, drawn at random`;
  const rows = [
    ["Replies awaiting a check (every held reply, and the shown ones drawn)", stats.reviews.pending],
    ["Shown replies checked", drawn],
    ["Shown replies staff rejected (the screens' misses)", missRate],
    ["Approved", stats.reviews.approved],
    ["Rejected without a correction", stats.reviews.rejected],
    ["Rejected with a correction", stats.reviews.corrected],
    ["Open hand-offs", stats.handoffs.open],
    ["Closed hand-offs", stats.handoffs.closed],
    ["Median time to a decision", seconds(stats.seconds_to_decision_median)],
    ["90th percentile time to a decision", seconds(stats.seconds_to_decision_p90)],
    ["Shown as the model drafted them", share(stats.shown_as_drafted_share)],
  ];
  $("figure-table").replaceChildren(
    el(
      "table",
      { class: "figures" },
      el("caption", { text: "The desk's figures" }),
      el("tbody", {}, ...rows.map(([name, value]) => el("tr", {}, el("th", { scope: "row", text: name }), el("td", { text: String(value) })))),
    ),
  );
}

// Signing out releases the person's claims first, so colleagues need not wait for them to expire.
async function signOutEverywhere() {
  say("Releasing your claims and signing out.");
  clearTimeout(state.refreshTimer);
  try {
    for (const tab of Object.keys(TABS)) {
      const page = await listOf(tab);
      for (const item of page.items.filter((queued) => queued.claim && queued.claim.mine)) {
        await api("POST", `${itemPath(tab, item.conversation_id, item.turn_id)}/release`).catch(() => null);
      }
    }
  } finally {
    signOut(state.config);
  }
}

// --- start ------------------------------------------------------------------------------------------

async function start() {
  state.config = await config();
  $("local-notice").hidden = !state.config.local;
  for (const button of document.querySelectorAll("[data-tab]")) {
    button.addEventListener("click", () => openTab(button.dataset.tab).catch(problem));
  }
  $("sign-in").addEventListener("click", () => beginSignIn(state.config).catch(problem));
  $("sign-out").addEventListener("click", () => signOutEverywhere().catch(problem));
  onSignInChange((token) => {
    if (!token && state.token) {
      state.token = null;
      clearTimeout(state.refreshTimer);
      $("item-panel").hidden = true;
      state.item = null;
      showSignedOut("You signed out in another tab.");
    } else if (token && !state.token) {
      state.token = token;
      showSignedIn().catch(problem);
    }
  });
  try {
    state.token = (await finishSignIn(state.config)) || currentToken();
  } catch (error) {
    problem(error);
  }
  if (!state.token) {
    showSignedOut();
    return;
  }
  await showSignedIn();
}

start().catch(problem);
