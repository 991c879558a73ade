#!/usr/bin/env python3
"""a2aflow's interop peer: an A2A 1.0 agent built on the official Python SDK (a2a-sdk==1.3.0).

    python peer_agent.py PORT [GRPC_PORT]

A port of 0 lets the system choose one; once both servers listen, the peer prints one line
`ready PORT GRPC_PORT` (the ports it bound; GRPC_PORT is `-` without gRPC) to stdout. Binding
its own ports closes the race of a parent that picks a free port and passes it on.

Listens on 127.0.0.1:PORT only and serves the public card at /.well-known/agent-card.json,
JSON-RPC at /rpc and HTTP+JSON under /api; with GRPC_PORT, the SDK's gRPC server
(lf.a2a.v1.A2AService, plaintext) on 127.0.0.1:GRPC_PORT too, its interface on the card as
`127.0.0.1:GRPC_PORT` (the SDKs' own form: no scheme). The first word of the message text picks the
behaviour:

    reply ...   one Message back, no task
    work ...    a Task: SUBMITTED, WORKING, artifact "out" (the text), COMPLETED
    wait N      a Task that stays WORKING for N seconds, then artifact "out" (the text),
                COMPLETED; cancellable
    stream ...  a Task: WORKING, three appended chunks of artifact "chunks", COMPLETED
    fail ...    a Task: WORKING, then FAILED with a status message
    input ...   a Task: WORKING, then INPUT_REQUIRED (no Negotiation-T context)
    auth ...    a Task: WORKING, then AUTH_REQUIRED

The Rust side (tests/interop/main.rs) starts it, waits for the card, drives both bindings and
kills it when done. All bindings share one request handler and task store.
"""

from __future__ import annotations

import asyncio
import socket
import sys
import uuid

import grpc
import uvicorn
from starlette.applications import Starlette

from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler, GrpcHandler
from a2a.server.routes import (
    create_agent_card_routes,
    create_jsonrpc_routes,
    create_rest_routes,
)
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types import a2a_pb2_grpc
from a2a.types.a2a_pb2 import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentSkill,
    Message,
    Part,
    Role,
    Task,
    TaskState,
    TaskStatus,
)

RPC_PATH = '/rpc'
REST_PATH = '/api'


class InteropExecutor(AgentExecutor):
    """Behaviour by the first word of the user's text."""

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        text = context.get_user_input().strip()
        verb, _, rest = text.partition(' ')
        verb = verb.lower()

        if verb == 'reply' or verb not in ('work', 'wait', 'stream', 'fail', 'input', 'auth'):
            await event_queue.enqueue_event(
                Message(
                    message_id=str(uuid.uuid4()),
                    context_id=context.context_id,
                    role=Role.ROLE_AGENT,
                    parts=[Part(text=text)],
                )
            )
            return

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

        if verb == 'fail':
            await updater.failed(updater.new_agent_message([Part(text=f'could not do it: {rest}')]))
            return
        if verb == 'input':
            await updater.requires_input(
                updater.new_agent_message([Part(text='which city do you mean?')])
            )
            return
        if verb == 'auth':
            await updater.requires_auth(updater.new_agent_message([Part(text='sign in first')]))
            return
        if verb == 'work':
            await updater.add_artifact([Part(text=text)], name='out', last_chunk=True)
        elif verb == 'wait':
            try:
                seconds = float(rest.split()[0]) if rest.split() else 5.0
            except ValueError:
                seconds = 5.0
            await asyncio.sleep(seconds)  # the SDK cancels this on CancelTask
            await updater.add_artifact([Part(text=text)], name='out', last_chunk=True)
        else:  # stream
            chunk_id = str(uuid.uuid4())
            for i in range(3):
                await asyncio.sleep(0.05)
                await updater.add_artifact(
                    [Part(text=f'part-{i} ')],
                    artifact_id=chunk_id,
                    name='chunks',
                    append=i > 0,
                    last_chunk=i == 2,
                )
        await updater.complete()

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        await TaskUpdater(event_queue, context.task_id, context.context_id).cancel()


def agent_card(port: int, grpc_port: int | None) -> AgentCard:
    base = f'http://127.0.0.1:{port}'
    interfaces = [
        AgentInterface(url=base + RPC_PATH, protocol_binding='JSONRPC', protocol_version='1.0'),
        AgentInterface(url=base + REST_PATH, protocol_binding='HTTP+JSON', protocol_version='1.0'),
    ]
    if grpc_port is not None:
        interfaces.append(
            AgentInterface(url=f'127.0.0.1:{grpc_port}', protocol_binding='GRPC', protocol_version='1.0')
        )
    return AgentCard(
        name='a2aflow-interop-peer',
        description='Interop peer for a2aflow on the official a2a-sdk 1.3.0.',
        version='1.0.0',
        supported_interfaces=interfaces,
        capabilities=AgentCapabilities(streaming=True),
        default_input_modes=['text/plain'],
        default_output_modes=['text/plain'],
        skills=[
            AgentSkill(
                id='interop',
                name='interop behaviours',
                description='reply | work | wait N | stream | fail | input',
                tags=['interop'],
            )
        ],
    )


def listen(port: int) -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(('127.0.0.1', port))
    sock.listen(128)
    return sock


async def serve(port: int, grpc_port: int | None) -> None:
    sock = listen(port)
    port = sock.getsockname()[1]
    server = None
    if grpc_port is not None:
        server = grpc.aio.server()
        grpc_port = server.add_insecure_port(f'127.0.0.1:{grpc_port}')
    card = agent_card(port, grpc_port)
    handler = DefaultRequestHandler(
        agent_executor=InteropExecutor(),
        task_store=InMemoryTaskStore(),
        agent_card=card,
    )
    # The card route goes first: the REST routes end with a catch-all tenant mount.
    routes = list(create_agent_card_routes(card))
    routes += create_jsonrpc_routes(handler, rpc_url=RPC_PATH)
    routes += create_rest_routes(handler, path_prefix=REST_PATH)
    http = uvicorn.Server(
        uvicorn.Config(Starlette(routes=routes), host='127.0.0.1', port=port, log_level='warning')
    )
    if server is not None:
        a2a_pb2_grpc.add_A2AServiceServicer_to_server(GrpcHandler(handler), server)
        await server.start()
    print(f'ready {port} {grpc_port if grpc_port is not None else "-"}', flush=True)
    try:
        await http.serve(sockets=[sock])
    finally:
        if server is not None:
            await server.stop(grace=None)


def main(argv: list[str]) -> int:
    if len(argv) not in (1, 2) or not all(a.isdigit() for a in argv):
        print('usage: peer_agent.py PORT [GRPC_PORT]', file=sys.stderr)
        return 2
    port = int(argv[0])
    grpc_port = int(argv[1]) if len(argv) == 2 else None
    asyncio.run(serve(port, grpc_port))
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
