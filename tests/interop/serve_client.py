#!/usr/bin/env python3
"""The official Python SDK's *client* (a2a-sdk==1.3.0) driving `a2aflow serve`.

    python serve_client.py QUICK_URL SLOW_URL ASK_URL

QUICK_URL, SLOW_URL and ASK_URL are agent base URLs (`http://host:port/agents/NAME`; the client
resolves `.well-known/agent-card.json` under them): QUICK's workflow finishes at once, SLOW's
waits on a slow remote task, ASK's remote task asks for input (a gate). For each binding
(JSONRPC, HTTP+JSON, GRPC — the card's `host:port` gRPC interface, reached in the clear, the
workflow named by the interface's tenant) it sends blocking and streaming, gets a task, lists a context, cancels a
slow task, answers a gate by a follow-up message and has a too-deep delegation request
refused, printing one JSON line per check:

    {"binding": ..., "check": ..., ...facts the Rust side asserts...}

Any exception ends it with exit code 1 (the traceback on stderr).
"""

from __future__ import annotations

import asyncio
import json
import sys
import uuid

import grpc

from a2a.client import ClientConfig, create_client
from a2a.types import (
    CancelTaskRequest,
    GetTaskRequest,
    ListTasksRequest,
    Message,
    Part,
    Role,
    SendMessageConfiguration,
    SendMessageRequest,
    TaskState,
)


def emit(**facts) -> None:
    print(json.dumps(facts), flush=True)


def request(text: str, context_id: str | None = None, immediately: bool = False):
    message = Message(message_id=str(uuid.uuid4()), role=Role.ROLE_USER, parts=[Part(text=text)])
    if context_id:
        message.context_id = context_id
    return SendMessageRequest(
        message=message,
        configuration=SendMessageConfiguration(return_immediately=immediately),
    )


def config(binding: str, streaming: bool) -> ClientConfig:
    """The client configuration for one binding (gRPC: a plaintext channel to the card's URL)."""
    return ClientConfig(
        streaming=streaming,
        supported_protocol_bindings=[binding],
        grpc_channel_factory=grpc.aio.insecure_channel,
    )


def state(task) -> str:
    return TaskState.Name(task.status.state)


async def one_task(client, req):
    events = [event async for event in client.send_message(req)]
    assert len(events) == 1 and events[0].HasField("task"), events
    return events[0].task


async def answer_gate(binding: str, ask_url: str) -> None:
    """A gated task is INPUT_REQUIRED with the agent's words; a follow-up on it finishes it."""
    ask = await create_client(ask_url, client_config=config(binding, streaming=False))
    gated = await one_task(ask, request("start"))
    said = [p.text for p in gated.status.message.parts]
    follow = request("here is the input", context_id=gated.context_id)
    follow.message.task_id = gated.id
    done = await one_task(ask, follow)
    refused = None
    again = request("once more", context_id=gated.context_id)
    again.message.task_id = gated.id
    try:
        await one_task(ask, again)
    except Exception as e:  # the SDK's typed error for a follow-up on an ended task
        refused = type(e).__name__
    emit(
        binding=binding,
        check="gate",
        gated=state(gated),
        said=said,
        answered=state(done),
        sameTask=done.id == gated.id,
        refused=refused,
    )
    await ask.close()


async def refused_delegation(binding: str, quick_url: str) -> None:
    """A delegation request deeper than the server's cap is rejected with its reason."""
    quick = await create_client(quick_url, client_config=config(binding, streaming=False))
    req = request("review", context_id="py-root")
    req.message.metadata.update(
        {
            "a2aflow/kind": "delegation_request",
            "a2aflow/parentExecutionId": "py-parent",
            "a2aflow/rootExecutionId": "py-root",
            "a2aflow/flowId": "quick-id",
            "a2aflow/depth": 99,
        }
    )
    task = await one_task(quick, req)
    emit(
        binding=binding,
        check="refused",
        state=state(task),
        reason=task.metadata["a2aflow/refusalReason"],
        hasExecutionId="a2aflow/executionId" in task.metadata,
        contextId=task.context_id,
    )
    await quick.close()


async def drive(binding: str, quick_url: str, slow_url: str) -> None:
    blocking = config(binding, streaming=False)
    streaming = config(binding, streaming=True)

    quick = await create_client(quick_url, client_config=blocking)
    task = await one_task(quick, request("hello from python"))
    emit(
        binding=binding,
        check="send",
        state=state(task),
        id=task.id,
        contextId=task.context_id,
        artifacts=[a.artifact_id for a in task.artifacts],
        status=task.metadata["a2aflow/status"],
    )

    got = await quick.get_task(GetTaskRequest(id=task.id))
    emit(binding=binding, check="get", state=state(got), id=got.id)

    context = f"py-{binding}-{uuid.uuid4()}"
    ids = [(await one_task(quick, request(f"n{i}", context))).id for i in range(2)]
    listed = await quick.list_tasks(ListTasksRequest(context_id=context))
    emit(
        binding=binding,
        check="list",
        sent=ids,
        listed=[t.id for t in listed.tasks],
        total=listed.total_size,
        next=listed.next_page_token,
    )

    stream = await create_client(quick_url, client_config=streaming)
    kinds, last = [], None
    async for event in stream.send_message(request("stream from python")):
        kind = event.WhichOneof("payload")
        kinds.append(kind)
        if kind == "status_update":
            last = TaskState.Name(event.status_update.status.state)
    emit(binding=binding, check="stream", kinds=kinds, last=last)

    slow = await create_client(slow_url, client_config=blocking)
    live = await one_task(slow, request("wait for me", immediately=True))
    canceled = await slow.cancel_task(CancelTaskRequest(id=live.id))
    emit(
        binding=binding,
        check="cancel",
        before=state(live),
        after=state(canceled),
        id=canceled.id,
    )
    for client in (quick, stream, slow):
        await client.close()


async def main() -> None:
    quick_url, slow_url, ask_url = sys.argv[1], sys.argv[2], sys.argv[3]
    for binding in ("JSONRPC", "HTTP+JSON", "GRPC"):
        await drive(binding, quick_url, slow_url)
        await answer_gate(binding, ask_url)
        await refused_delegation(binding, quick_url)


if __name__ == "__main__":
    asyncio.run(main())
