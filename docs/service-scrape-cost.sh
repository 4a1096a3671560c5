#!/bin/sh
# The cost of one `GET /metrics` scrape of a service node (docs/SERVICE.md): starts a one-node
# service, grants 100 leases and takes 100 locks so that the page has something to count,
# then times 1,000 scrapes on one kept-alive connection.
#
# Usage: docs/service-scrape-cost.sh [path/to/ringleader] [SCRAPES]
set -eu
RL=${1:-target/release/ringleader}
N=${2:-1000}
DIR=$(mktemp -d)
trap 'kill $PID 2>/dev/null; wait; rm -rf "$DIR"' EXIT
$RL serve --api 127.0.0.1:24190 --listen 127.0.0.1:24290 --data-dir "$DIR/data" >"$DIR/log" 2>&1 &
PID=$!
python3 - "$N" <<'PY'
import http.client, json, sys, time
n = int(sys.argv[1])
for _ in range(200):
    try:
        c = http.client.HTTPConnection("127.0.0.1", 24190, timeout=10)
        c.request("GET", "/ready"); r = c.getresponse(); r.read()
        if r.status == 200: break
    except OSError: pass
    time.sleep(0.05)
def post(path, body):
    c.request("POST", path, json.dumps(body), {"content-type": "application/json"})
    r = c.getresponse(); return json.loads(r.read())
for i in range(100):
    g = post("/v1/lease/grant", {"ttl_ms": 600000})
    post("/v1/lock/acquire", {"name": f"l{i}", "lease": g["lease"], "key": g["key"], "wait": False})
c.request("GET", "/metrics"); page = c.getresponse().read()
t0 = time.perf_counter()
for _ in range(n):
    c.request("GET", "/metrics"); r = c.getresponse(); r.read()
dt = time.perf_counter() - t0
print(f"{n} scrapes of a {len(page)}-byte page in {dt:.3f} s: {dt / n * 1e3:.3f} ms per scrape")
PY
