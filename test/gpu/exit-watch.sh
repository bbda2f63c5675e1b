#!/usr/bin/env bash
# Runs one GPU test file and, if the process outlives uvu's summary by GRACE seconds (or runs
# past LIMIT seconds without one), shows where it is before killing it: its threads' states and
# kernel wait channels, their CPU use, native stacks (gdb, where installed), and whether the GPU
# is still busy (a spinning kernel keeps it at 100%). With test/gpu/exit-watch.ts preloaded, the
# log says whether JavaScript had finished ('exit event') and what held the event loop.
#   bash test/gpu/exit-watch.sh test/gpu/topk.test.ts [GRACE_S=20] [LIMIT_S=540]
# The full log is $OUT/exit-watch.log (or /tmp/exit-watch.log), gdb's stacks beside it; a summary goes
# to stdout.
set -u
file=${1:?usage: bash test/gpu/exit-watch.sh test/gpu/NAME.test.ts [grace_s] [limit_s]}
grace=${2:-20}
limit=${3:-540}
log=${OUT:-/tmp}/exit-watch.log
start=$SECONDS
node --import tsx --import ./test/gpu/exit-watch.ts "$file" >"$log" 2>&1 &
pid=$!
summary=''
while kill -0 "$pid" 2>/dev/null; do
  now=$((SECONDS - start))
  if [ -z "$summary" ] && grep -q 'Duration:' "$log"; then summary=$now; echo "[exit-watch.sh] uvu summary at ${now} s"; fi
  if { [ -n "$summary" ] && [ $((now - summary)) -ge "$grace" ]; } || [ "$now" -ge "$limit" ]; then
    if [ -n "$summary" ]; then echo "[exit-watch.sh] still alive at ${now} s, ${grace} s after the summary"
    else echo "[exit-watch.sh] no summary after ${now} s: still in the tests"; fi
    echo "--- threads (state, wait channel, %cpu)"
    ps -L -o tid,stat,wchan:32,pcpu,comm -p "$pid"
    [ -r /proc/"$pid"/stack ] && { echo "--- kernel stack of the main thread"; head -8 /proc/"$pid"/stack; }
    if command -v gdb >/dev/null; then
      # frames without their arguments: which library (libcuda, node, koffi) each thread is in
      echo "--- native stacks"
      # (all threads in $OUT/exit-watch-gdb.txt; here the main thread and those in libcuda)
      timeout 90 gdb -p "$pid" -batch -ex 'thread apply all bt 10' 2>/dev/null | grep -E '^(Thread|#)' \
        | sed -E 's/ \(([a-z_]+=[^)]*|)\)( at | from |$)/ ()\2/' | cut -c1-170 >"${log%.log}-gdb.txt"
      awk '/^Thread/ { if (b != "" && (b ~ /LWP '"$pid"'\)/ || b ~ /libcuda/)) printf "%s", b; b = "" } { b = b $0 "\n" }
           END { if (b ~ /LWP '"$pid"'\)/ || b ~ /libcuda/) printf "%s", b }' "${log%.log}-gdb.txt" | head -80
    fi
    echo "--- GPU"
    nvidia-smi --query-gpu=utilization.gpu,memory.used --format=csv 2>&1
    nvidia-smi --query-compute-apps=pid,used_memory --format=csv 2>&1
    kill -9 "$pid"
    break
  fi
  sleep 1
done
wait "$pid" 2>/dev/null
rc=$?
echo "[exit-watch.sh] rc ${rc} after $((SECONDS - start)) s"
sed 's/\x1b\[[0-9;]*m//g' "$log" | grep -aE 'Total:|Passed:|Skipped:|Duration:|\[exit-watch\]|FAIL' | tail -40
