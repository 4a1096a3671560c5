"""Chang-Roberts election on a unidirectional ring, in SimPy.

The peer of `ringleader bench --algo chang-roberts --latency uniform:1ms..2ms`: n nodes with
the ids 1..n in a seeded random order, every node initiating at time 0, each message delayed
independently by U[1 ms, 2 ms) with no FIFO order per link. Prints one JSON object: messages
delivered, the leader, CPU seconds of the run (build and simulate, not the interpreter's start)
and peak resident memory.

Usage: python simpy_ring.py NODES [SEED]
"""

import json
import random
import resource
import sys
import time

import simpy

ELECTION = 0
ELECTED = 1


def implied_deliveries(uids: list) -> int:
    """Deliveries Chang-Roberts makes on this arrangement when every node initiates at time 0.

    Every node is a participant before any message arrives (delays are at least 1 ms), so
    ELECTION(j) travels from j to the next larger id and is discarded there, whatever the
    delays; the maximum's travels the whole ring, and ELECTED(max) n hops more.
    """
    n = len(uids)
    hops = [n] * n  # the maximum keeps n
    waiting = []  # positions whose next larger id is not found yet, ids decreasing
    for k in range(2 * n):
        while waiting and uids[waiting[-1]] < uids[k % n]:
            j = waiting.pop()
            hops[j] = k - j
        if k < n:
            waiting.append(k)
    return sum(hops) + n


def main() -> int:
    if len(sys.argv) not in (2, 3) or not sys.argv[1].isdigit() or int(sys.argv[1]) < 2:
        print("usage: simpy_ring.py NODES [SEED]  (NODES an integer >= 2)", file=sys.stderr)
        return 2
    n = int(sys.argv[1])
    seed = int(sys.argv[2]) if len(sys.argv) == 3 else 1

    cpu_start = time.process_time()
    rng = random.Random(seed)
    uids = list(range(1, n + 1))
    rng.shuffle(uids)

    env = simpy.Environment()
    inboxes = [simpy.Store(env) for _ in range(n)]
    leaders = [0] * n
    delivered = 0

    def send(to: simpy.Store, msg: tuple) -> None:
        # The link delay is a timeout whose callback puts the message into the successor's
        # inbox. One process per message (the `latency` process of SimPy's examples) would cost
        # a generator, a Process and its Initialize event on top of the timeout for every
        # message; the callback is the same model with one event per message.
        delay = env.timeout(1.0 + rng.random())  # milliseconds, U[1, 2)
        delay.callbacks.append(lambda _event: to.put(msg))

    def node(i: int):
        nonlocal delivered
        uid = uids[i]
        inbox = inboxes[i]
        succ = inboxes[(i + 1) % n]
        # Every node initiates at time 0.
        participant = True
        send(succ, (ELECTION, uid))
        while True:
            kind, j = yield inbox.get()
            delivered += 1
            if kind == ELECTION:
                if j > uid:
                    participant = True
                    send(succ, (ELECTION, j))
                elif j < uid:
                    if not participant:
                        participant = True
                        send(succ, (ELECTION, uid))
                else:
                    participant = False
                    leaders[i] = uid
                    send(succ, (ELECTED, uid))
            elif j != uid:
                participant = False
                leaders[i] = j
                send(succ, (ELECTED, j))

    for i in range(n):
        env.process(node(i))
    env.run()
    cpu = time.process_time() - cpu_start

    # Every node must have recorded the same leader, the maximum id.
    agreed = leaders[0] if all(x == leaders[0] for x in leaders) else None
    print(
        json.dumps(
            {
                "framework": f"SimPy {simpy.__version__}",
                "nodes": n,
                "delivered": delivered,
                "implied": implied_deliveries(uids),
                "leader": agreed,
                "end_time_ms": round(env.now, 3),
                "cpu_seconds": round(cpu, 4),
                "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
            }
        )
    )
    return 0 if agreed == n and delivered == implied_deliveries(uids) else 1


if __name__ == "__main__":
    sys.exit(main())
