#!/usr/bin/env python3
"""A broken Chang-Roberts for the lab's tests: it forwards smaller ids instead of swallowing them
(and joins with its own). Every ELECTION goes all the way round: N^2 + N messages when all
initiate. Its owner, back, is elected only if it saw no larger id.

The correct node, for comparison:

The ring is the order of node_ids: n1 -> n2 -> ... -> nN -> n1. An initiator sends
ELECTION(its id) to its successor. A node forwards a larger id, replaces a smaller one by its
own if it has not joined yet, and swallows it if it has. The id that comes back to its owner
is the largest: the owner is elected and sends ELECTED round the ring.
Messages per election: from 2N (the largest starts alone) to N(N+1)/2 + N.
"""
import json
import sys

me, my_id, succ = None, 0, None
participant = False
leader = None
max_seen = 0
next_id = 0


def send(dest, body):
    global next_id
    next_id += 1
    body["msg_id"] = next_id
    print(json.dumps({"src": me, "dest": dest, "body": body}), flush=True)


def believe(uid):
    global leader
    leader = uid
    send("lab", {"type": "leader", "leader": uid, "term": 0})


for line in sys.stdin:
    msg = json.loads(line)
    src, body = msg["src"], msg["body"]
    kind = body["type"]
    if kind == "init":
        me = body["node_id"]
        my_id = int(me[1:])
        ids = body["node_ids"]
        succ = ids[(ids.index(me) + 1) % len(ids)]
        send(src, {"type": "init_ok", "in_reply_to": body["msg_id"]})
    elif kind == "start_election":
        if not participant:
            participant = True
            send(succ, {"type": "election", "id": my_id})
        send(src, {"type": "start_election_ok", "in_reply_to": body["msg_id"]})
    elif kind == "election":
        uid = body["id"]
        max_seen = max(max_seen, uid)
        if uid > my_id:
            participant = True
            send(succ, {"type": "election", "id": uid})
        elif uid < my_id:
            # THE BUG: a smaller id is forwarded, not swallowed (and the node joins too).
            send(succ, {"type": "election", "id": uid})
            if not participant:
                participant = True
                send(succ, {"type": "election", "id": my_id})
        elif uid == my_id and max_seen > my_id:
            pass
        elif uid == my_id:
            participant = False
            believe(my_id)
            send(succ, {"type": "elected", "id": my_id})
    elif kind == "elected":
        participant = False
        if body["id"] != my_id:
            believe(body["id"])
            send(succ, {"type": "elected", "id": body["id"]})
    elif kind == "leader?":
        send(src, {"type": "leader", "in_reply_to": body["msg_id"], "leader": leader, "term": 0})
    print(json.dumps({"src": me, "dest": "lab", "body": {"type": "lab_done"}}), flush=True)
