#!/bin/bash
# Scale-out on Postgres + NATS: `headwater serve` plus WORKERS `headwater worker` processes under
# wrk (64 connections, POST /v1/batch with 20 track calls, bench/batch20.lua), printing calls/s,
# p99 and CPU per call of every process (serve, workers, Postgres, nats-server).
#   DATABASE_URL must reach a Postgres server (a database of the run's own is made and dropped).
#   usage: bench/scale-out.sh WORKERS users|new SECONDS     (npm run build first)
set -e
ROOT=$(cd "$(dirname "$0")/.." && pwd)
WORK=$(mktemp -d)
cd "$WORK"
cp "$ROOT/bench/batch20.lua" newusers.lua
W=$1; MODE=$2; SECS=$3
db=$(node $ROOT/.ci/fresh-db.mjs)
BASE=${DATABASE_URL:-postgres://postgres@127.0.0.1:5432/postgres}
export DATABASE_URL=${BASE%/*}/$db NATS_URL=nats://127.0.0.1:4222 HEADWATER_STREAM_PREFIX=scale$$ HEADWATER_SECRET_KEY=$(openssl rand -hex 32) HEADWATER_LOG_LEVEL=warn
TOKEN=hwo_profiling_token_0123456789
rm -rf d0 && mkdir d0
node $ROOT/bin/headwater.js serve --port 18081 --host 127.0.0.1 --data-dir d0 --operator-token $TOKEN > serve.log 2>&1 &
PIDS="$!"
for i in $(seq 1 60); do curl -s localhost:18081/health/live >/dev/null && break; sleep 0.5; done
for w in $(seq 1 $W); do rm -rf w$w && mkdir w$w; node $ROOT/bin/headwater.js worker --data-dir w$w > worker$w.log 2>&1 & PIDS="$PIDS $!"; done
sleep 3
ORG=$(curl -s -XPOST localhost:18081/v1/orgs -H "authorization: Bearer $TOKEN" -H 'content-type: application/json' -d '{"data":{"name":"prof"}}')
j() { node -e "let s='';process.stdin.on('data',d=>s+=d).on('end',()=>{const o=JSON.parse(s);console.log($1)})"; }
KEY=$(echo "$ORG" | j 'o.data.apiKey'); ADMIN=$(echo "$ORG" | j 'o.data.sessions.admin'); ORGID=$(echo "$ORG" | j 'o.data.org.id')
curl -s -XPATCH localhost:18081/v1/orgs/$ORGID -H "authorization: Bearer $TOKEN" -H 'content-type: application/json' -d '{"data":{"limits":{"ratePerSecond":1000000000,"burst":1000000000}}}' >/dev/null
APP=$(curl -s -XPOST localhost:18081/v1/apps -H "authorization: Bearer $ADMIN" -H 'content-type: application/json' -d '{"data":{"name":"a"}}' | j 'o.data.id')
SRC=$(curl -s localhost:18081/v1/apps/$APP/sources -H "authorization: Bearer $ADMIN" | j 'o.data[0].id')
RUN=warm$$ KEY=$KEY SRC=$SRC MODE=$MODE wrk -t2 -c64 -d5s -s newusers.lua http://127.0.0.1:18081 > /dev/null
cpu() { for p in "$@"; do awk '{print $14+$15}' /proc/$p/stat; done; }
pgcpu() { for p in $(pgrep -f "postgres: .*$db"; pgrep -x postgres | head -1); do awk '{print $14+$15}' /proc/$p/stat 2>/dev/null; done | paste -sd+ | bc; }
natscpu() { awk '{print $14+$15}' /proc/$(pgrep -x nats-server | head -1)/stat; }
B=$(cpu $PIDS | paste -sd' '); BPG=$(pgcpu); BN=$(natscpu)
OUT=$(RUN=run$$ KEY=$KEY SRC=$SRC MODE=$MODE wrk -t2 -c64 -d${SECS}s -s newusers.lua --latency http://127.0.0.1:18081)
A=$(cpu $PIDS | paste -sd' '); APG=$(pgcpu); AN=$(natscpu)
REQ=$(echo "$OUT" | awk '/Requests\/sec/{print $2}')
P99=$(echo "$OUT" | awk '/ 99%/{print $2}')
NON=$(echo "$OUT" | awk '/Non-2xx/{print $5}')
echo "workers=$W mode=$MODE req/s=$REQ calls/s=$(echo "$REQ*20" | bc) p99=$P99 non2xx=${NON:-0}"
i=0; for p in $PIDS; do b=$(echo $B | cut -d' ' -f$((i+1))); a=$(echo $A | cut -d' ' -f$((i+1))); echo "  proc$i cpu%=$(echo "($a-$b)/$SECS" | bc -l | cut -c1-5) us/call=$(echo "($a-$b)*10000/($REQ*20*$SECS)" | bc -l | cut -c1-6)"; i=$((i+1)); done
echo "  postgres cpu%=$(echo "($APG-$BPG)/$SECS" | bc -l | cut -c1-5) us/call=$(echo "($APG-$BPG)*10000/($REQ*20*$SECS)" | bc -l | cut -c1-6)"
echo "  nats cpu%=$(echo "($AN-$BN)/$SECS" | bc -l | cut -c1-5)"
kill $PIDS; wait 2>/dev/null || true
node $ROOT/.ci/fresh-db.mjs --drop $db
rm -rf "$WORK"
