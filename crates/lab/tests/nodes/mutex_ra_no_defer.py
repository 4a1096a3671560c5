#!/usr/bin/env python3
"""A broken Ricart-Agrawala for the lab's tests: it does not defer replies while requesting.

To enter, a node asks every other node with REQUEST(ts, id) and waits for all N-1 REPLYs:
2(N-1) messages per entry. A node replies at once unless it holds the section or its own
outstanding request is older (smaller (ts, id)); then it defers the reply until it leaves.
"""
import json
import sys

me, my_id, peers = None, 0, []
clock = 0            # Lamport clock
requesting = False   # between acquire and entry
holding = False      # in the critical section
my_request = None    # (ts, id) of the outstanding request
replies = set()      # who has replied to it
deferred = []        # who waits for our reply
client = None        # (client, msg_id) of the acquire to answer
next_id = 0


def send(dest, body):
    global next_id
    next_id += 1
    body["msg_id"] = next_id
    print(json.dumps({"src": me, "dest": dest, "body": body}), flush=True)


def enter():
    global requesting, holding
    requesting, holding = False, True
    send(client[0], {"type": "acquire_ok", "in_reply_to": client[1]})


for line in sys.stdin:
    msg = json.loads(line)
    src, body = msg["src"], msg["body"]
    kind = body["type"]
    if kind == "init":
        me = body["node_id"]
        my_id = int(me[1:])
        peers = [n for n in body["node_ids"] if n != me]
        send(src, {"type": "init_ok", "in_reply_to": body["msg_id"]})
    elif kind == "acquire":
        clock += 1
        requesting, my_request, replies = True, (clock, my_id), set()
        client = (src, body["msg_id"])
        for p in peers:
            send(p, {"type": "request", "ts": clock})
        if not peers:
            enter()
    elif kind == "request":
        clock = max(clock, body["ts"]) + 1
        theirs = (body["ts"], int(src[1:]))
        # THE BUG: a requesting node replies at once, whatever the timestamps say.
        if holding:
            deferred.append(src)
        else:
            send(src, {"type": "reply"})
    elif kind == "reply":
        replies.add(src)
        if requesting and len(replies) == len(peers):
            enter()
    elif kind == "release":
        holding = False
        for p in deferred:
            send(p, {"type": "reply"})
        deferred = []
        send(src, {"type": "release_ok", "in_reply_to": body["msg_id"]})
    # End-of-step marker: this input is handled (lets --lockstep move on at once).
    print(json.dumps({"src": me, "dest": "lab", "body": {"type": "lab_done"}}), flush=True)
