#!/usr/bin/env python3
"""Chandy-Misra-Haas edge chasing (AND model) as a lab node (docs/LAB.md, standard library only).

A node whose transaction waits (want) sends a probe to every holder it waits for. A blocked node
passes a probe on to its own holders, once per initiation; a running node drops it. A probe that
comes back to its initiator, still in the same wait, went round a cycle of blocked nodes: the
initiator reports the cycle to the lab (detection only, as in the paper: nothing is aborted).
"""
import json
import sys

me, next_id = None, 0
waits, wait_no = set(), 0   # the holders this node waits for, and which wait this is
seen = {}                   # initiator -> the latest of its waits this node passed on


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
        elif waits and seen.get(initiator, 0) < number:
            seen[initiator] = number
            probe(path + [[me, wait_no]])
    print(json.dumps({"src": me, "dest": "lab", "body": {"type": "lab_done"}}), flush=True)
