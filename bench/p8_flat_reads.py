"""P8 flat reads: the DynamoDB items read per console list, per figures call and per /messages poll, with
10, 1,000 and 100,000 items of history stored; the goal is flat (the same items read at every size).

On the local moto stack, through the handlers (the staff API as the console calls it, the turn API as the
chat polls it). Reads are counted by devstack.reads: a botocore `after-call` hook on every client that adds
a Query's or Scan's ScannedCount, a GetItem's item, a BatchGetItem's items. At each size the table holds
that many items of desk history (decided review items and closed hand-offs, half each, as a decision or a
close leaves them) and a conversation of that many items (final turns, fixed-text and generated with their
replies, and a staff message every ten turns), both written with BatchWriteItem (devstack.history), not
through the APIs; the open work (two replies awaiting a check, one held, an open hand-off) and one real
decision (so every counter item exists) stay the same. The history is cumulative: 10, then 990 more, then
99,000 more.

Measured at each size: the first page of each console tab as console.js asks for it (held replies,
replies awaiting a check, hand-offs: open items, oldest first, 100 a page); GET /staff/stats; and
/messages polls on the long conversation: idle (every message seen), one new message (the last unseen),
and waiting (a reply being prepared). Beside them, what the same questions read before the figures came
from counters and the message list from its end (the whole queues, as `whole_queue` paged them, and the
whole conversation, as `thread` reads it), measured on the same table.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import UUID, uuid4

from bench._common import SMALLEST, emit, markdown_table, quiet_handlers, summary

BENCH = "P8"
QUESTION = "DynamoDB items read per console list, figures call and /messages poll at 10, 1,000 and 100,000 stored items"
SIZES = (10,) if SMALLEST else (10, 1_000, 100_000)
BEFORE_SIZES = (10,) if SMALLEST else (10, 1_000)
"""Where the reads of the code before this change are measured too: at 100,000 moto pages the queue index
by scanning the whole table in Python for each of its 200 pages, which took over ten minutes."""
GOAL_TEXT = "the same items read at every size (flat)"
TABS = {
    "held replies tab (first page)": ("/staff/reviews", "drafted=false&review=pending&order=oldest&limit=100"),
    "awaiting a check tab (first page)": ("/staff/reviews", "drafted=true&review=pending&order=oldest&limit=100"),
    "hand-offs tab (first page)": ("/staff/handoffs", "status=open&order=oldest&limit=100"),
}
CLEAN = "Should staff contact you by phone or by email?"
HELD = "Should staff contact you by phone or by email? Your seat is guaranteed."
START = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)


def conversation_turns(items: int) -> tuple[list[Any], list[Any]]:
    """Turns and staff messages of a conversation of `items` items (a generated turn is two: TURN, REPLY)."""
    from devstack.history import StaffNote

    turns: list[Any] = []
    notes: list[Any] = []
    count = 1  # the STATE item
    while count < items:
        turns.append("generated" if len(turns) % 2 else "fixed")
        count += 2 if turns[-1] == "generated" else 1
        if len(turns) % 10 == 5 and count < items:
            notes.append(StaffNote(len(turns), "We will call you this afternoon."))
            count += 1
    return turns, notes


def main() -> int:
    from devstack.history import conversation_items, desk_history, put_items
    from devstack.stack import TABLE_NAME, LocalStack, local_stack
    from dialogue.actions import Queue
    from dialogue.aws.factory import get_desk_store, get_store
    from dialogue.aws.table import MESSAGE_PREFIX, STATE_SK, TURN_PREFIX, partition_key, turn_sort_key
    from dialogue.human_checks import use_draws
    from dialogue.ports import PageQuery
    from dialogue.realize import RealizedReply, RealizeJob

    def staff(stack: LocalStack, method: str, path: str, body: Any = None, query: str = "") -> Any:
        response = stack.call_staff_api(method, path, body, query=query)
        if response.status != 200:
            raise RuntimeError(f"{method} {path} answered {response.status}: {response.body}")
        return response.body

    def generated(stack: LocalStack, conversation_id: str, reply: str) -> int:
        turn = stack.call_api("POST", f"/conversations/{conversation_id}/turns", {"text": "When does it meet?"}).body
        stack.run_dispatch()
        (message,) = stack.sqs.receive_message(QueueUrl=stack.realize_queue.url)["Messages"]
        stack.sqs.delete_message(QueueUrl=stack.realize_queue.url, ReceiptHandle=message["ReceiptHandle"])
        job = RealizeJob.model_validate_json(message["Body"])
        worded = RealizedReply(job=job, text=reply, engine="canned", ended_by_eos=True, hit_token_cap=False)
        stack.sqs.send_message(QueueUrl=stack.screen_queue.url, MessageBody=worded.model_dump_json())
        stack.run_screen_function()
        return int(turn["turn_id"])

    rows: dict[str, dict[int, int]] = {}
    before: dict[str, dict[int, int]] = {}
    seconds: dict[int, float] = {}

    def count(name: str, size: int, call: Any, into: dict[str, dict[int, int]] | None = None) -> Any:
        with stack.reads.counting() as reads:
            result = call()
        (rows if into is None else into).setdefault(name, {})[size] = reads.items
        emit(BENCH, "measurement", read=name, stored_items=size, items_read=reads.items, requests=reads.requests,
             by_operation=dict(reads.by_operation), before=into is not None)  # fmt: skip
        return result

    # Every reply shown as drafted is drawn for a check (at a desk one in ten is, at random): the open work
    # is then the same on every run, two replies awaiting a check.
    with local_stack() as stack, quiet_handlers(), use_draws(lambda: 0.0):
        store = get_store()
        # The open work and one decision: the same at every size.
        desk_conversation = stack.call_api("POST", "/conversations").body["conversation_id"]
        stack.call_api("POST", f"/conversations/{desk_conversation}/turns", {"text": "I want the forklift course."})
        stack.call_api("POST", f"/conversations/{desk_conversation}/turns", {"text": "Can I talk to a person?"})
        decided = generated(stack, desk_conversation, CLEAN)
        generated(stack, desk_conversation, CLEAN)
        generated(stack, desk_conversation, HELD)
        staff(stack, "POST", f"/staff/reviews/{desk_conversation}/{decided}/claim")
        staff(stack, "POST", f"/staff/reviews/{desk_conversation}/{decided}/decision", {"decision": "approve"})

        seeded = 0
        for size in SIZES:
            started = time.perf_counter()
            put_items(
                stack.dynamodb, TABLE_NAME, desk_history(store, size - seeded, start=START + timedelta(seconds=seeded))
            )
            seeded = size
            conversation_id = uuid4()
            turns, notes = conversation_turns(size)
            put_items(stack.dynamodb, TABLE_NAME, conversation_items(store, conversation_id, turns, notes, start=START))
            seconds[size] = time.perf_counter() - started

            for name, (path, query) in TABS.items():
                count(name, size, lambda path=path, query=query: staff(stack, "GET", path, query=query))
            count("GET /staff/stats", size, lambda: staff(stack, "GET", "/staff/stats"))
            end = len(turns) + len(notes)
            messages_path = f"/conversations/{conversation_id}/messages"
            for name, after in (("/messages poll, idle", end), ("/messages poll, one new message", end - 1)):
                page = count(
                    name,
                    size,
                    lambda path=messages_path, after=after: stack.call_api("GET", path, query=f"after={after}"),
                )
                if page.status != 200 or page.body["next_after"] != end:
                    raise RuntimeError(f"{name}: {page.status} {page.body}")
            # A reply being prepared: the turn after the last, pending (its STATE and TURN items rewritten).
            waiting = [*turns, "pending"]
            wanted = {STATE_SK, turn_sort_key(len(waiting))}
            put_items(
                stack.dynamodb,
                TABLE_NAME,
                (
                    i
                    for i in conversation_items(store, conversation_id, waiting, notes, start=START)
                    if i["sk"]["S"] in wanted
                ),
            )
            page = count(
                "/messages poll, waiting",
                size,
                lambda path=messages_path, after=end: stack.call_api("GET", path, query=f"after={after}"),
            )
            if not page.body["waiting"]:
                raise RuntimeError(f"waiting poll: {page.body}")

            # The same questions as the code before this change read them.
            def whole_queues() -> None:
                desk_store = get_desk_store()
                for queue in (Queue.REVIEW, Queue.HANDOFF):
                    cursor = None
                    while True:
                        _, cursor = desk_store.queue_page(PageQuery(queue, limit=500, cursor=cursor))
                        if cursor is None:
                            break

            def whole_conversation(conversation: UUID = conversation_id) -> None:
                store.load_conversation(conversation)
                for prefix in (TURN_PREFIX, MESSAGE_PREFIX):  # every turn, reply and staff message, all pages
                    for _page in stack.dynamodb.get_paginator("query").paginate(
                        TableName=TABLE_NAME,
                        KeyConditionExpression="pk = :pk AND begins_with(sk, :prefix)",
                        ExpressionAttributeValues={":pk": {"S": partition_key(conversation)}, ":prefix": {"S": prefix}},
                        ConsistentRead=True,
                    ):
                        pass

            if size in BEFORE_SIZES:
                count("GET /staff/stats", size, whole_queues, into=before)
                count("/messages poll (any)", size, whole_conversation, into=before)
            emit(BENCH, "size", stored_items=size, seed_and_measure_seconds=time.perf_counter() - started)
            print(f"{size:,} items: seeded in {seconds[size]:.0f} s, measured", flush=True)

    headers = ["read", *(f"{size:,} items" for size in SIZES), "flat"]
    table_rows: list[list[Any]] = []
    flat = True
    for name, by_size in rows.items():
        same = len(set(by_size.values())) == 1
        flat = flat and same
        table_rows.append([name, *(f"{by_size[size]:,}" for size in SIZES), "yes" if same else "no"])
    table = markdown_table(headers, table_rows)
    before_rows = [[name, *(f"{by_size[size]:,}" for size in BEFORE_SIZES)] for name, by_size in before.items()]
    before_headers = [f"{size:,} items" for size in BEFORE_SIZES]
    before_table = markdown_table(["read, before (whole queues, whole conversation)", *before_headers], before_rows)
    stats_reads = rows["GET /staff/stats"][SIZES[0]]
    idle = rows["/messages poll, idle"][SIZES[0]]
    most = max(by_size[SIZES[0]] for name, by_size in rows.items() if name.startswith("/messages"))
    figure = (
        f"{'flat' if flat else 'not flat'}: figures {stats_reads} items, /messages {idle} items idle and at most "
        f"{most} per poll, at every size (before: {before['GET /staff/stats'][BEFORE_SIZES[-1]]:,} and "
        f"{before['/messages poll (any)'][BEFORE_SIZES[-1]]:,} at {BEFORE_SIZES[-1]:,}, growing with the items)"
    )
    explained = "\n\n".join(
        [
            "Before this change (the whole review and hand-off queues for the figures; the whole conversation "
            "for every poll), the same table, at 10 and 1,000 items only (at 100,000 moto pages the queue index "
            "by scanning the whole table for each page: over ten minutes):\n\n" + before_table,
            "Items read are DynamoDB's: a Query's ScannedCount (a COUNT query's counted items too), a "
            "GetItem's item, a BatchGetItem's items. The lists read the open-queue index (open items only) and "
            "the REPLY items of the reviews listed; the figures read the TOTAL counters, the last 30 days' "
            "counters (here one day) and count the open items (3); a poll reads the STATE item and the staff "
            "message counter, and, unless every message was seen, the last turn's TURN and REPLY items and the "
            "last staff message (the first page of each backwards read; later pages hold 4 items).",
            "Seeding (BatchWriteItem into moto) took "
            + ", ".join(f"{seconds[size]:.0f} s at {size:,}" for size in SIZES)
            + "; moto's index queries scan the whole table in Python, so calls slow down as it grows, but the "
            "items they read do not grow.",
        ]
    )
    values = {"items_read": rows, "before": before, "seed_seconds": seconds}
    summary(BENCH, QUESTION, GOAL_TEXT, figure=figure, met=flat, table=table, notes=explained, values=values)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
