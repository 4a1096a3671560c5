#!/usr/bin/env python3
"""Lamport's logical clock as a lab node (docs/LAB.md, standard library only).

Every event ticks the clock; a message carries the sender's clock; a receive sets the clock
to max(own, received) + 1. Then e -> f implies C(e) < C(f): the clock condition.
"""
import json
import sys

me, clock, next_id = None, 0, 0


def send(dest, body):
    global next_id
    next_id += 1
    body["msg_id"] = next_id
    print(json.dumps({"src": me, "dest": dest, "body": body}), flush=True)


for line in sys.stdin:
    msg = json.loads(line)
    src, body = msg["src"], msg["body"]
    kind = body["type"]
    if kind == "init":
        me = body["node_id"]
        send(src, {"type": "init_ok", "in_reply_to": body["msg_id"]})
    elif kind == "local":
        clock += 1
        send(src, {"type": "local_ok", "in_reply_to": body["msg_id"], "value": clock})
    elif kind == "send_to":
        clock += 1
        send(body["to"], {"type": "app", "clock": clock})
        send(src, {"type": "send_to_ok", "in_reply_to": body["msg_id"], "value": clock})
    elif kind == "app":
        clock = max(clock, body["clock"]) + 1
    elif kind == "read":
        send(src, {"type": "value", "in_reply_to": body["msg_id"], "value": clock})
    print(json.dumps({"src": me, "dest": "lab", "body": {"type": "lab_done"}}), flush=True)
