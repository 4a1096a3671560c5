#!/usr/bin/env python3
"""A buggy Chandy-Misra-Haas: a blocked node passes on every probe it receives, not once per
initiation. A probe that enters a cycle its initiator is not on goes round it for ever; the
cost bound of --algo-like chandy-misra-haas (one probe per wait-for edge per initiation)
catches it."""
import json
import sys

me, next_id = None, 0
waits, wait_no = set(), 0   # the holders this node waits for, and which wait this is


def send(dest, body):
    global next_id
    next_id += 1
    body["msg_id"] = next_id
    print(json.dumps({"src": me, "dest": dest, "body": body}), flush=True)


def probe(path):
    for holder in sorted(waits):
        send(holder, {"type": "probe", "path": path})


for line in sys.stdin:
    msg = json.loads(line)
    src, body = msg["src"], msg["body"]
    kind = body["type"]
    if kind == "init":
        me = body["node_id"]
        send(src, {"type": "init_ok", "in_reply_to": body["msg_id"]})
    elif kind == "want":                      # my transaction now waits for these holders
        wait_no += 1
        waits = set(body["holders"])
        probe([[me, wait_no]])
        send(src, {"type": "want_ok", "in_reply_to": body["msg_id"]})
    elif kind == "grant":                     # one holder let me have its resource
        waits.discard(body["holder"])
        send(src, {"type": "grant_ok", "in_reply_to": body["msg_id"]})
    elif kind == "abort":                     # my client gave up waiting
        waits = set()
        send(src, {"type": "abort_ok", "in_reply_to": body["msg_id"]})
    elif kind == "probe":
        path = body["path"]
        initiator, number = path[0]
        if initiator == me:
            if waits and number == wait_no:   # back home, same wait: a cycle
                cycle = [node for node, _ in path]
                send("lab", {"type": "deadlock", "cycle": cycle})
        elif waits:                           # the bug: no "once per initiation"
            probe(path + [[me, wait_no]])
    print(json.dumps({"src": me, "dest": "lab", "body": {"type": "lab_done"}}), flush=True)
