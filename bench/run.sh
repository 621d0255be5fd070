#!/usr/bin/env bash
# Partita and PostgreSQL 15 side by side: same machine, same data, same pgbench scripts.
#
#   bench/run.sh           full mode (30 s per workload and system)
#   bench/run.sh --short   short mode (5 s each; a few minutes in all)
#
# Builds Partita in release mode, starts it and a local PostgreSQL 15 (Debian's package,
# default durability: fsync and synchronous_commit on) on loopback, loads 1,000,000 rows in
# 10,000 partitions into both, runs each workload on one system then the other, and prints a
# Markdown table (TPS, p50/p99 latency, the ratio Partita / PostgreSQL, peak RSS) that it also
# writes into docs/BENCHMARKS.md between the bench markers.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
SECONDS_PER_RUN=30
MODE=full
if [[ "${1:-}" == "--short" ]]; then
  SECONDS_PER_RUN=5
  MODE=short
fi
PGBIN=${PGBIN:-/usr/lib/postgresql/15/bin}
ROWS=1000000

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

echo "building partita (release)…" >&2
(cd "$ROOT" && cargo build --release --bin partita >&2)

WORK=$(mktemp -d /tmp/partita-bench.XXXXXX)
PG_PORT=$(free_port)
PARTITA_PORT=$(free_port)
PARTITA_PID=
SAMPLER_PID=
AS_PG=""
cleanup() {
  [[ -n "$SAMPLER_PID" ]] && kill "$SAMPLER_PID" 2>/dev/null || true
  [[ -n "$PARTITA_PID" ]] && kill "$PARTITA_PID" 2>/dev/null || true
  $AS_PG "$PGBIN/pg_ctl" -D "$WORK/pg" -m fast stop >/dev/null 2>&1 || true
  rm -rf "$WORK"
}
trap cleanup EXIT

# PostgreSQL refuses to run as root: use the postgres user then.
if [[ $(id -u) == 0 ]]; then
  AS_PG="runuser -u postgres --"
  chown postgres "$WORK"
  chmod 755 "$WORK"
fi
$AS_PG "$PGBIN/initdb" -D "$WORK/pg" -U bench --auth=trust >/dev/null
$AS_PG "$PGBIN/pg_ctl" -D "$WORK/pg" -l "$WORK/pg.log" -w \
  -o "-p $PG_PORT -k $WORK -c listen_addresses=127.0.0.1 -c shared_buffers=1GB" start >/dev/null

"$ROOT/target/release/partita" --data-dir "$WORK/partita" --listen "127.0.0.1:$PARTITA_PORT" \
  >"$WORK/partita.log" 2>&1 &
PARTITA_PID=$!
for _ in $(seq 100); do
  "$PGBIN/pg_isready" -h 127.0.0.1 -p "$PARTITA_PORT" >/dev/null 2>&1 && break
  sleep 0.1
done

# Peak resident memory of each server, sampled twice a second (PostgreSQL: the postmaster and
# every process it started, summed).
rss_kb() {
  local t=0 v
  for p in "$@"; do
    v=$(awk '/VmRSS/ {print $2}' "/proc/$p/status" 2>/dev/null || true)
    t=$((t + ${v:-0}))
  done
  echo $t
}
PG_MAIN=$(head -1 "$WORK/pg/postmaster.pid")
(
  peak_partita=0; peak_pg=0
  while kill -0 "$PARTITA_PID" 2>/dev/null; do
    a=$(rss_kb "$PARTITA_PID"); b=$(rss_kb "$PG_MAIN" $(pgrep -P "$PG_MAIN"))
    ((a > peak_partita)) && peak_partita=$a
    ((b > peak_pg)) && peak_pg=$b
    echo "$peak_partita $peak_pg" >"$WORK/rss"
    sleep 0.5
  done
) &
SAMPLER_PID=$!

sql() { "$PGBIN/psql" -X -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$1" -U bench -d postgres -c "$2"; }

# The seeds' registrations: partition key tenant, row key id (PRIMARY KEY (a, b) means
# ((a), b) in Partita and a plain composite key in PostgreSQL).
SCHEMA="CREATE TABLE reg (tenant int, id int, name text, age int, city text, PRIMARY KEY (tenant, id));
        CREATE TABLE batch (tenant int, id int, name text, age int, city text, PRIMARY KEY (tenant, id))"
# Bulk load with COPY (psql's \copy from a CSV file), then COPY the table back out.
python3 - "$WORK/reg.csv" "$ROWS" <<'PY'
import sys
path, rows = sys.argv[1], int(sys.argv[2])
with open(path, "w") as f:
    for g in range(rows):
        f.write(f"{g // 100},{g % 100},runner {g},{18 + g % 60},city{g % 50}\n")
PY
declare -A LOAD_SECONDS EXPORT_SECONDS
elapsed() { python3 -c "print(f'{$2 - $1:.1f}')"; }
for system in partita postgres; do
  port=$PARTITA_PORT; [[ $system == postgres ]] && port=$PG_PORT
  sql "$port" "$SCHEMA"
  start=$(date +%s.%N)
  sql "$port" "\copy reg from '$WORK/reg.csv' with csv"
  LOAD_SECONDS[$system]=$(elapsed "$start" "$(date +%s.%N)")
  [[ $system == postgres ]] && sql "$port" "VACUUM ANALYZE reg"
  start=$(date +%s.%N)
  sql "$port" "\copy reg to '$WORK/export_$system.csv' with csv"
  EXPORT_SECONDS[$system]=$(elapsed "$start" "$(date +%s.%N)")
done
rate() { python3 -c "print(f'{$ROWS / max($1, 0.01):,.0f}')"; }
ratio() { python3 -c "print(f'{$2 / max($1, 0.01):.2f}')"; }

# Index/view maintenance: a table with 2 secondary indexes and 1 view (Partita's view is
# materialized and kept in the same commit; PostgreSQL's is a plain view, which costs
# nothing on write), 100,000 rows.
IX_COMMON="CREATE TABLE reg_ix (tenant int, id int, name text, age int, city text, PRIMARY KEY (tenant, id));
           CREATE INDEX reg_ix_age ON reg_ix (age);
           CREATE INDEX reg_ix_city ON reg_ix (city)"
IX_VIEW_PARTITA="CREATE MATERIALIZED VIEW reg_ix_by_city WITH (primary_key = '((city), tenant, id)')
                 AS SELECT city, tenant, id, name FROM reg_ix"
IX_VIEW_POSTGRES="CREATE VIEW reg_ix_by_city AS SELECT city, tenant, id, name FROM reg_ix"
for system in partita postgres; do
  port=$PARTITA_PORT; view=$IX_VIEW_PARTITA
  [[ $system == postgres ]] && port=$PG_PORT && view=$IX_VIEW_POSTGRES
  sql "$port" "$IX_COMMON"
  sql "$port" "$view"
  sql "$port" "INSERT INTO reg_ix SELECT g / 100, g % 100, 'runner ' || g, 18 + g % 60, 'city' || (g % 50)
               FROM generate_series(0, 99999) g"
  [[ $system == postgres ]] && sql "$port" "VACUUM ANALYZE reg_ix"
done

# workload: script, protocol, clients
WORKLOADS=(
  "point_select simple 1" "point_select prepared 1" "point_select simple 4" "point_select prepared 4"
  "range_scan prepared 1" "partition_range prepared 1" "full_scan simple 1"
  "insert_one prepared 1" "insert_batch prepared 1" "update_key prepared 1"
  "insert_indexed prepared 1" "update_indexed prepared 1"
)

run() { # system port script protocol clients
  local log="$WORK/log_$1_$3_$4_$5"
  mkdir -p "$log"
  (cd "$log" && "$PGBIN/pgbench" -n -h 127.0.0.1 -p "$2" -U bench -M "$4" -c "$5" -j "$5" \
    -T "$SECONDS_PER_RUN" -f "$ROOT/bench/scripts/$3.sql" -l postgres >"$log/out.txt" 2>&1) || {
    echo "pgbench failed on $1 for $3:" >&2; cat "$log/out.txt" >&2; return 1; }
  python3 - "$log" <<'PY'
import glob, re, sys
log = sys.argv[1]
out = open(f"{log}/out.txt").read()
tps = float(re.search(r"tps = ([0-9.]+)", out).group(1))
lat = sorted(int(line.split()[2]) for f in glob.glob(f"{log}/pgbench_log.*") for line in open(f))
pick = lambda p: lat[min(len(lat) - 1, int(p * (len(lat) - 1)))] / 1000 if lat else 0
print(f"{tps:.0f} {pick(0.5):.2f} {pick(0.99):.2f}")
PY
}

TABLE="| workload | protocol | clients | Partita TPS | PostgreSQL TPS | ratio | Partita p50 / p99 ms | PostgreSQL p50 / p99 ms |
|---|---|---|---|---|---|---|---|"
for w in "${WORKLOADS[@]}"; do
  read -r script protocol clients <<<"$w"
  read -r p_tps p_p50 p_p99 <<<"$(run partita "$PARTITA_PORT" "$script" "$protocol" "$clients")"
  read -r g_tps g_p50 g_p99 <<<"$(run postgres "$PG_PORT" "$script" "$protocol" "$clients")"
  ratio=$(python3 -c "print(f'{$p_tps / max($g_tps, 1e-9):.2f}')")
  TABLE+="
| $script | $protocol | $clients | $p_tps | $g_tps | $ratio | $p_p50 / $p_p99 | $g_p50 / $g_p99 |"
  echo "$script $protocol $clients: partita $p_tps tps, postgres $g_tps tps" >&2
done

read -r PARTITA_RSS PG_RSS <"$WORK/rss"
PARTITA_RSS=$((PARTITA_RSS / 1024))
PG_RSS=$((PG_RSS / 1024))
MACHINE="$(nproc) vCPU $(awk -F': ' '/model name/ {print $2; exit}' /proc/cpuinfo), $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo)"
RESULT="Mode: $MODE ($SECONDS_PER_RUN s per workload and system), $(date -u +%Y-%m-%d). Machine: $MACHINE.
Bulk load of $ROWS rows with COPY FROM (psql's \copy, CSV): Partita ${LOAD_SECONDS[partita]} s
($(rate "${LOAD_SECONDS[partita]}") rows/s), PostgreSQL ${LOAD_SECONDS[postgres]} s ($(rate "${LOAD_SECONDS[postgres]}") rows/s),
ratio $(ratio "${LOAD_SECONDS[partita]}" "${LOAD_SECONDS[postgres]}"). COPY TO of the same rows: Partita ${EXPORT_SECONDS[partita]} s,
PostgreSQL ${EXPORT_SECONDS[postgres]} s, ratio $(ratio "${EXPORT_SECONDS[partita]}" "${EXPORT_SECONDS[postgres]}"). Peak RSS: Partita $PARTITA_RSS MiB, PostgreSQL (all processes) $PG_RSS MiB.

$TABLE"
echo "$RESULT"
python3 - "$ROOT/docs/BENCHMARKS.md" "$RESULT" <<'PY'
import sys
path, result = sys.argv[1], sys.argv[2]
text = open(path).read()
begin, end = "<!-- bench:begin -->", "<!-- bench:end -->"
if begin in text and end in text:
    head, rest = text.split(begin, 1)
    text = head + begin + "\n" + result + "\n" + end + rest.split(end, 1)[1]
else:
    text += f"\n{begin}\n{result}\n{end}\n"
open(path, "w").write(text)
PY
