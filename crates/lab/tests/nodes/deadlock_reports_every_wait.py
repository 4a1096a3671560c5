#!/usr/bin/env python3
"""A buggy deadlock detector: it reports a deadlock as soon as its transaction waits, naming
itself and its first holder, without chasing any edge. The lab's soundness checker catches the
phantom cycle (the holder does not wait for it)."""
import json
import sys

me = None
for line in sys.stdin:
    msg = json.loads(line)
    src, body = msg["src"], msg["body"]
    kind = body["type"]
    if kind == "init":
        me = body["node_id"]
        print(json.dumps({"src": me, "dest": src, "body": {"type": "init_ok", "in_reply_to": body["msg_id"]}}), flush=True)
    elif kind == "want":
        holder = sorted(body["holders"])[0]
        print(json.dumps({"src": me, "dest": "lab", "body": {"type": "deadlock", "cycle": [me, holder]}}), flush=True)
    print(json.dumps({"src": me, "dest": "lab", "body": {"type": "lab_done"}}), flush=True)
