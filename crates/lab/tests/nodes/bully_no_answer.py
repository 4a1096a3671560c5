#!/usr/bin/env python3
"""A broken bully election for the lab's tests: it does not answer ELECTION.

A node that starts an election sends ELECTION to every higher id and waits T for an ANSWER.
Without one it is the coordinator and tells every lower id (COORDINATOR). A node that gets
ELECTION from a lower id answers it and starts its own election. A node that got an ANSWER
waits 3T for the COORDINATOR, and starts again if none came. Timers are the lab's
(lab_timer), so that --lockstep runs them on its virtual clock.
Messages per election: from N-2 (the second highest detects) to N^2-N-1 (the lowest does).
"""
import json
import sys

T = 30  # ms: more than a round trip
me, my_id, ids = None, 0, []
leader = None
electing = False
answered = False
round_no = 0
next_id = 0


def send(dest, body):
    global next_id
    next_id += 1
    body["msg_id"] = next_id
    print(json.dumps({"src": me, "dest": dest, "body": body}), flush=True)


def timer(ms, tag):
    send("lab", {"type": "lab_timer", "after_ms": ms, "tag": tag})


def believe(uid):
    global leader
    if leader != uid:
        leader = uid
        send("lab", {"type": "leader", "leader": uid, "term": 0})


def start():
    global electing, answered, round_no
    electing, answered = True, False
    round_no += 1
    higher = [n for n in ids if int(n[1:]) > my_id]
    for n in higher:
        send(n, {"type": "election"})
    timer(T, {"wait": "answer", "round": round_no})


def become_coordinator():
    global electing
    electing = False
    believe(my_id)
    for n in ids:
        if int(n[1:]) < my_id:
            send(n, {"type": "coordinator", "id": my_id})


for line in sys.stdin:
    msg = json.loads(line)
    src, body = msg["src"], msg["body"]
    kind = body["type"]
    if kind == "init":
        me = body["node_id"]
        my_id = int(me[1:])
        ids = body["node_ids"]
        send(src, {"type": "init_ok", "in_reply_to": body["msg_id"]})
    elif kind == "start_election":
        if not electing:
            start()
        send(src, {"type": "start_election_ok", "in_reply_to": body["msg_id"]})
    elif kind == "election":
        pass  # THE BUG: no ANSWER to a lower id (it still starts its own election).
        if not electing:
            start()
    elif kind == "answer":
        if electing and not answered:
            answered = True
            timer(3 * T, {"wait": "coordinator", "round": round_no})
    elif kind == "coordinator":
        electing = False
        believe(body["id"])
    elif kind == "lab_timeout":
        tag = body["tag"]
        if electing and tag["round"] == round_no:
            if tag["wait"] == "answer" and not answered:
                become_coordinator()
            elif tag["wait"] == "coordinator":
                start()
    elif kind == "leader?":
        send(src, {"type": "leader", "in_reply_to": body["msg_id"], "leader": leader, "term": 0})
    print(json.dumps({"src": me, "dest": "lab", "body": {"type": "lab_done"}}), flush=True)
