#!/usr/bin/env python3
"""Regenerates the committed seed corpora under fuzz/seeds/<target>/ from the repository's
fixtures. Run from the repository root: python3 fuzz/seeds/generate.py

Input layouts follow the fuzz targets' doc comments: sse_parser seeds start with a limit byte and
two split-seed bytes; error_envelope seeds start with the HTTP status as a little-endian u16;
stream_event seeds start with a framing byte (0: JSON-RPC, 1: HTTP+JSON); inbound_request seeds
are JSON-RPC request bodies as they reach the server.
"""
import hashlib, json, os, re, shutil, struct

ROOT = os.getcwd()
OUT = os.path.join(ROOT, "fuzz", "seeds")
PY = os.path.join(ROOT, "tests", "fixtures", "a2a-python-sdk-1.3.0", "index.json")
VECTORS = os.path.join(ROOT, "tests", "fixtures", "a2a-t", "vectors.json")
WORKFLOWS = os.path.join(ROOT, "crates", "a2aflow-model", "tests", "corpus")
DELEGATION = os.path.join(ROOT, "crates", "a2aflow-model", "tests", "it", "delegation_schema.rs")
MAX_SEED = 8192


def write(target, data):
    if isinstance(data, str):
        data = data.encode()
    if len(data) > MAX_SEED:
        return
    d = os.path.join(OUT, target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, hashlib.sha1(data).hexdigest()[:16]), "wb") as f:
        f.write(data)


def main():
    for t in ["sse_parser", "error_envelope", "workflow_loader", "negotiation_context", "delegation_record",
              "stream_event", "inbound_request"]:
        shutil.rmtree(os.path.join(OUT, t), ignore_errors=True)
    exchanges = json.load(open(PY))
    for e in exchanges:
        req_body = (e["request"].get("body") or "").encode()
        if e["file"].startswith("jsonrpc/") and req_body:
            write("inbound_request", req_body)
        resp = e["response"]
        body = (resp.get("body") or "").encode()
        ctype = dict((k.lower(), v) for k, v in resp["headers"]).get("content-type") or ""
        if "event-stream" in ctype:
            write("sse_parser", b"\xff\x01\x00" + body)  # default limit
            write("sse_parser", b"\x40\x07\x13" + body)  # 257-byte limit, other splits
            # Each data payload is an A2A response that may hold an error envelope.
            framing = b"\x01" if e["file"].startswith("rest/") else b"\x00"
            for m in re.finditer(rb"^data: ?(.*)$", body, re.M):
                data = m.group(1).rstrip(b"\r")
                write("stream_event", framing + data)
                if b'"error"' in data:
                    write("error_envelope", struct.pack("<H", 200) + data)
        elif body and (resp["status"] >= 400 or b'"error"' in body):
            write("error_envelope", struct.pack("<H", resp["status"]) + body)
    # Hand-written edge shapes.
    for s in [b"\xef\xbb\xbfdata: a\r\n\r\n", b"data: a\r\rdata: b\r\r", b": ping\n\nevent: error\ndata: {}\n\n",
              b"id: 1\nretry: 5\ndata\n\n", b"data: x\r\n"]:
        write("sse_parser", b"\xff\x00\x00" + s)
        write("sse_parser", b"\x02\xff\xff" + s)
    write("error_envelope", struct.pack("<H", 502) + b"<html><body><h1>502 Bad Gateway</h1></body></html>")
    write("error_envelope", struct.pack("<H", 401) + b"Authorization: Bearer abc token=xyz")
    write("error_envelope", struct.pack("<H", 400) + b'{"error":{"code":400,"status":"INVALID_ARGUMENT","message":"m","details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"TASK_NOT_FOUND","domain":"a2a-protocol.org","metadata":{}}]}}')

    # A follow-up on a task, and a delegation request (the served side's own shapes).
    write("inbound_request", json.dumps({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {
        "message": {"messageId": "m", "role": "ROLE_USER", "taskId": "t", "contextId": "c",
                    "parts": [{"text": "answer"}, {"data": {"k": 1}}]}}}))
    write("inbound_request", json.dumps({"jsonrpc": "2.0", "id": "d", "method": "SendStreamingMessage", "params": {
        "message": {"messageId": "m", "role": "ROLE_USER", "parts": [{"text": "review"}],
                    "metadata": {"a2aflow/kind": "delegation_request", "a2aflow/parentExecutionId": "p",
                                 "a2aflow/rootExecutionId": None, "a2aflow/flowId": "f", "a2aflow/depth": 2.0}}}}))

    for dirpath, _, files in os.walk(WORKFLOWS):
        for name in sorted(files):
            write("workflow_loader", open(os.path.join(dirpath, name), "rb").read())

    vectors = json.load(open(VECTORS))
    for case in vectors["context_parse"]:
        inp = case["input"]
        write("negotiation_context", json.dumps(inp))
        if isinstance(inp, dict) and "negotiationContext" in inp:
            write("negotiation_context", json.dumps(inp["negotiationContext"]))
            write("negotiation_context", json.dumps([inp, {}, inp]))
    for case in vectors["reply"]:
        for k in ("received", "reply"):
            if isinstance(case.get(k), dict):
                write("negotiation_context", json.dumps(case[k]))

    # The json!({...}) examples of the delegation schema test are plain JSON.
    src = open(DELEGATION).read()
    for m in re.finditer(r"json!\((\{.*?\n    \})\)", src, re.S):
        text = m.group(1)
        json.loads(text)
        write("delegation_record", text)


if __name__ == "__main__":
    main()
