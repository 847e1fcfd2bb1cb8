"""The local stack behaves as the AWS pieces it stands for: the stream's event source mapping (filter,
batches, retry from the first failure), the queues' clock, and moto's transactions undone correctly
from the lighter snapshot devstack gives them, and moto's KMS keys (symmetric ones share one unused RSA key)."""

from __future__ import annotations

from typing import Any
from unittest import mock

import boto3
import pytest
from botocore.exceptions import ClientError
from cryptography.hazmat.primitives.asymmetric import rsa
from desk_calls import new_conversation

from devstack.stack import REGION, TABLE_NAME, LocalStack
from devstack.streams import StreamMapping
from dialogue.aws.turns import PENDING_TURN_INSERTS


def post(stack: LocalStack, conversation_id: str, text: str) -> int:
    answer = stack.call_api("POST", f"/conversations/{conversation_id}/turns", {"text": text})
    assert answer.status in (200, 202), answer
    return int(answer.status)


def recording_mapping(stack: LocalStack, fail_on: set[int] | None = None) -> tuple[StreamMapping, list[list[str]]]:
    """A second mapping on the table's stream whose handler records each batch's sort keys and fails
    the records of the turn ids in `fail_on` (once each)."""
    batches: list[list[str]] = []
    failing = set(fail_on or ())

    def handler(event: dict[str, Any]) -> dict[str, Any]:
        keys = [record["dynamodb"]["Keys"]["sk"]["S"] for record in event["Records"]]
        batches.append(keys)
        failures = []
        for record, key in zip(event["Records"], keys, strict=True):
            turn_id = int(key.removeprefix("TURN#"))
            if turn_id in failing:
                failing.discard(turn_id)
                failures.append({"itemIdentifier": record["dynamodb"]["SequenceNumber"]})
        return {"batchItemFailures": failures}

    mapping = StreamMapping(
        streams=stack.stream.streams,
        stream_arn=stack.stream.stream_arn,
        handler=handler,
        filter_pattern=PENDING_TURN_INSERTS,
        batch_size=2,
    )
    return mapping, batches


def test_the_stream_mapping_delivers_pending_turn_inserts_only(stack: LocalStack) -> None:
    conversation_id = new_conversation(stack)
    statuses = [post(stack, conversation_id, text) for text in ("forklift", "talk to a person", "email please")]
    assert statuses == [202, 200, 202]
    # The stream also holds the STATE puts, a final TURN's insert, and now a pending TURN's MODIFY
    stack.dynamodb.update_item(
        TableName=TABLE_NAME,
        Key={"pk": {"S": f"CONV#{conversation_id}"}, "sk": {"S": "TURN#000001"}},
        UpdateExpression="SET fallback_used = :no",
        ExpressionAttributeValues={":no": {"BOOL": False}},
    )
    mapping, batches = recording_mapping(stack)
    assert mapping.poll() == 2
    assert batches == [["TURN#000001", "TURN#000003"]]
    assert mapping.poll() == 0, "read records are not delivered again"


def test_a_failed_record_is_delivered_again_with_those_after_it(stack: LocalStack) -> None:
    conversation_id = new_conversation(stack)
    for text in ("forklift", "email please", "when does it meet?", "what about phone?"):
        post(stack, conversation_id, text)
    mapping, batches = recording_mapping(stack, fail_on={2})
    assert mapping.poll() == 0  # the first batch (turns 1, 2) failed at turn 2
    assert mapping.poll() == 3  # from turn 2 on, as Lambda retries from the first failure
    assert batches == [["TURN#000001", "TURN#000002"], ["TURN#000002", "TURN#000003"], ["TURN#000004"]]
    assert mapping.failed_batches == 1


def test_read_stream_records_are_trimmed(stack: LocalStack) -> None:
    from moto.core import DEFAULT_ACCOUNT_ID
    from moto.dynamodb.models import dynamodb_backends

    shard = dynamodb_backends[DEFAULT_ACCOUNT_ID]["us-east-1"].tables[TABLE_NAME].stream_shard
    conversation_id = new_conversation(stack)
    post(stack, conversation_id, "forklift")
    post(stack, conversation_id, "email please")
    assert len(shard.items) >= 4
    stack.run_dispatch()
    assert shard.items == []
    post(stack, conversation_id, "when does it meet?")
    assert stack.run_dispatch() == 1, "records after a trim are read as before"


def test_the_queue_clock_releases_delayed_and_invisible_messages(stack: LocalStack) -> None:
    queue = stack.screen_queue.url
    stack.sqs.send_message(QueueUrl=queue, MessageBody="later", DelaySeconds=60)
    assert stack.sqs.receive_message(QueueUrl=queue).get("Messages", []) == []
    stack.advance(61)
    (message,) = stack.sqs.receive_message(QueueUrl=queue, VisibilityTimeout=30)["Messages"]
    assert stack.sqs.receive_message(QueueUrl=queue).get("Messages", []) == []
    stack.advance(31)
    (again,) = stack.sqs.receive_message(QueueUrl=queue)["Messages"]
    assert again["MessageId"] == message["MessageId"]


SET_A_TO_TWO = {
    "Update": {
        "TableName": TABLE_NAME,
        "Key": {"pk": {"S": "CONV#rollback"}, "sk": {"S": "A"}},
        "UpdateExpression": "SET v = :two",
        "ExpressionAttributeValues": {":two": {"N": "2"}},
    }
}


def item(stack: LocalStack, sort_key: str) -> dict[str, Any] | None:
    key = {"pk": {"S": "CONV#rollback"}, "sk": {"S": sort_key}}
    found: dict[str, Any] | None = stack.dynamodb.get_item(TableName=TABLE_NAME, Key=key).get("Item")
    return found


def test_a_cancelled_transaction_leaves_items_and_stream_as_they_were(stack: LocalStack) -> None:
    from moto.core import DEFAULT_ACCOUNT_ID
    from moto.dynamodb.models import dynamodb_backends

    def stream_records() -> int:  # the table object itself is replaced when a transaction is undone
        return len(dynamodb_backends[DEFAULT_ACCOUNT_ID]["us-east-1"].tables[TABLE_NAME].stream_shard.items)

    # Given three items and the stream records they made
    for sort_key, value in (("A", "1"), ("B", "1"), ("C", "1")):
        stack.dynamodb.put_item(
            TableName=TABLE_NAME, Item={"pk": {"S": "CONV#rollback"}, "sk": {"S": sort_key}, "v": {"N": value}}
        )
    records_before = stream_records()
    # When a transaction updates A, deletes B and puts D, then fails on C's condition
    with pytest.raises(ClientError) as raised:
        stack.dynamodb.transact_write_items(
            TransactItems=[
                SET_A_TO_TWO,
                {"Delete": {"TableName": TABLE_NAME, "Key": {"pk": {"S": "CONV#rollback"}, "sk": {"S": "B"}}}},
                {"Put": {"TableName": TABLE_NAME, "Item": {"pk": {"S": "CONV#rollback"}, "sk": {"S": "D"}}}},
                {
                    "ConditionCheck": {
                        "TableName": TABLE_NAME,
                        "Key": {"pk": {"S": "CONV#rollback"}, "sk": {"S": "C"}},
                        "ConditionExpression": "v = :nine",
                        "ExpressionAttributeValues": {":nine": {"N": "9"}},
                    }
                },
            ]
        )
    assert raised.value.response["Error"]["Code"] == "TransactionCanceledException"
    # Then nothing changed: A keeps its value, B is there, D is not, and the stream has no new record
    assert item(stack, "A")["v"] == {"N": "1"}
    assert item(stack, "B") is not None
    assert item(stack, "D") is None
    assert stream_records() == records_before
    # And the table still works: a transaction that holds commits, and the stream records it
    stack.dynamodb.transact_write_items(TransactItems=[SET_A_TO_TWO])
    assert item(stack, "A")["v"] == {"N": "2"}
    assert stream_records() == records_before + 1


def test_a_symmetric_key_makes_no_rsa_key_and_an_asymmetric_one_makes_its_own(stack: LocalStack) -> None:
    """moto makes an RSA key for every KMS key; devstack's symmetric keys share one, made once per process."""
    kms = boto3.client("kms", region_name=REGION)
    with mock.patch.object(rsa, "generate_private_key", wraps=rsa.generate_private_key) as made:
        symmetric = [kms.create_key()["KeyMetadata"]["KeyId"] for _ in range(2)]
        assert made.call_count == 0
        signing = [kms.create_key(KeySpec="RSA_2048", KeyUsage="SIGN_VERIFY")["KeyMetadata"]["KeyId"] for _ in range(2)]
        assert made.call_count == 2
    first, second = (kms.get_public_key(KeyId=key)["PublicKey"] for key in signing)
    assert first != second
    # Each symmetric key still seals and opens with its own material, as moto does.
    for key in symmetric:
        opened = kms.decrypt(CiphertextBlob=kms.encrypt(KeyId=key, Plaintext=b"0117 496 0000")["CiphertextBlob"])
        assert (opened["Plaintext"], opened["KeyId"].rsplit("/", 1)[-1]) == (b"0117 496 0000", key)
