#!/usr/bin/env python3
"""The Python side of the serve_load bench: a plain echo agent on the official Python SDK
(a2a-sdk 1.3.0, the repo's interop venv), JSON-RPC only.

    python echo_agent.py

Listens on 127.0.0.1 (a port the system picks) and prints one line `ready PORT` once it
listens. JSON-RPC is served at /jsonrpc, the card at /.well-known/agent-card.json.

Every message becomes a task with the events a2aflow's served echo workflow streams: the Task
(SUBMITTED), WORKING, an artifact `result` carrying the text, COMPLETED. A text `hold K` waits,
after WORKING, until the parent has written K lines to stdin (each line is one release; the
bench holds streams open this way to measure memory per open stream). When stdin closes the
process ends.
"""

from __future__ import annotations

import asyncio
import os
import socket
import sys
import threading

import uvicorn
from starlette.applications import Starlette

from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types.a2a_pb2 import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentSkill,
    Part,
    Task,
    TaskState,
    TaskStatus,
)

RPC_PATH = '/jsonrpc'


class Releases:
    """How many release lines the parent has written, and a condition to wait on."""

    def __init__(self) -> None:
        self.count = 0
        self.changed = asyncio.Condition()

    async def bump(self) -> None:
        async with self.changed:
            self.count += 1
            self.changed.notify_all()

    async def wait_for(self, k: int) -> None:
        async with self.changed:
            await self.changed.wait_for(lambda: self.count >= k)


class EchoExecutor(AgentExecutor):
    def __init__(self, releases: Releases) -> None:
        self.releases = releases

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        text = context.get_user_input()
        if context.current_task is None:
            await event_queue.enqueue_event(
                Task(
                    id=context.task_id,
                    context_id=context.context_id,
                    status=TaskStatus(state=TaskState.TASK_STATE_SUBMITTED),
                    history=[context.message] if context.message else [],
                )
            )
        updater = TaskUpdater(event_queue, context.task_id, context.context_id)
        await updater.start_work()
        words = text.split()
        if len(words) == 2 and words[0] == 'hold' and words[1].isdigit():
            await self.releases.wait_for(int(words[1]))
        await updater.add_artifact([Part(text=text)], name='result', last_chunk=True)
        await updater.complete()

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        await TaskUpdater(event_queue, context.task_id, context.context_id).cancel()


def agent_card(port: int) -> AgentCard:
    return AgentCard(
        name='echo',
        description='Echoes its input (the serve_load bench).',
        version='1.0.0',
        supported_interfaces=[
            AgentInterface(
                url=f'http://127.0.0.1:{port}{RPC_PATH}',
                protocol_binding='JSONRPC',
                protocol_version='1.0',
            )
        ],
        capabilities=AgentCapabilities(streaming=True),
        default_input_modes=['text/plain'],
        default_output_modes=['text/plain'],
        skills=[AgentSkill(id='echo', name='echo', description='Echoes its input.', tags=['echo'])],
    )


def watch_stdin(loop: asyncio.AbstractEventLoop, releases: Releases) -> None:
    """One release per line; the process ends when stdin closes (the parent went away)."""
    for _ in sys.stdin:
        asyncio.run_coroutine_threadsafe(releases.bump(), loop)
    os._exit(0)


async def serve() -> None:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(('127.0.0.1', 0))
    # As deep a backlog as the bench's clients connect with at once.
    sock.listen(4096)
    port = sock.getsockname()[1]
    card = agent_card(port)
    releases = Releases()
    handler = DefaultRequestHandler(
        agent_executor=EchoExecutor(releases),
        task_store=InMemoryTaskStore(),
        agent_card=card,
    )
    routes = list(create_agent_card_routes(card))
    routes += create_jsonrpc_routes(handler, rpc_url=RPC_PATH)
    http = uvicorn.Server(
        uvicorn.Config(
            Starlette(routes=routes),
            host='127.0.0.1',
            port=port,
            log_level='warning',
            access_log=False,
            backlog=4096,
        )
    )
    threading.Thread(
        target=watch_stdin, args=(asyncio.get_running_loop(), releases), daemon=True
    ).start()
    print(f'ready {port}', flush=True)
    await http.serve(sockets=[sock])


if __name__ == '__main__':
    asyncio.run(serve())
