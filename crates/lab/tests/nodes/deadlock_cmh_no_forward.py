#!/usr/bin/env python3
"""A buggy Chandy-Misra-Haas: a node sends probes for its own waits but never passes on the
probes of others, so a probe comes back only over a cycle of one hop (it has none). The lab's
completeness checker catches the cycle nobody reports."""
import json
import sys

me, waits, wait_no = None, set(), 0


def send(dest, body):
    print(json.dumps({"src": me, "dest": dest, "body": body}), flush=True)


for line in sys.stdin:
    msg = json.loads(line)
    src, body = msg["src"], msg["body"]
    kind = body["type"]
    if kind == "init":
        me = body["node_id"]
        send(src, {"type": "init_ok", "in_reply_to": body["msg_id"]})
    elif kind == "want":
        wait_no += 1
        waits = set(body["holders"])
        for h in sorted(waits):
            send(h, {"type": "probe", "path": [[me, wait_no]]})
    elif kind == "grant":
        waits.discard(body["holder"])
    elif kind == "abort":
        waits = set()
    elif kind == "probe":
        initiator, number = body["path"][0]
        if initiator == me and waits and number == wait_no:
            send("lab", {"type": "deadlock", "cycle": [n for n, _ in body["path"]]})
        # the bug: nothing is passed on
    send("lab", {"type": "lab_done"})
