#!/usr/bin/env bash
# The entrypoint of modulo's image: `shard` runs one shard of a campaign, `merge` merges them.
#
# shard  runs the shard that JOB_COMPLETION_INDEX names (set by Kubernetes in every pod of an
#        Indexed Job) of MODULO_SHARD_COUNT (set by job.yaml to the Job's completions): modulo
#        reads both itself. It writes <name>.shard-K-of-N under MODULO_RESULTS and resumes it
#        when the pod runs again. It exits 0 when every schedule of the shard ran, whether they
#        passed or failed (their verdicts are the results), else modulo's status (3 incomplete
#        or interrupted, 2 bad input), so that the Job retries the pod.
# merge  merges every shard of the campaign under MODULO_RESULTS into MODULO_RESULTS/<name>.
#
# MODULO_SCHEDULES  the schedule file; when it does not exist, made with modulo gen MODULO_GEN
# MODULO_GEN        gen's arguments, as "--drm slr --ops 2 --replicas 3"
# MODULO_RESULTS    the results directory, on the volume every pod mounts
# MODULO_ARGS       more arguments for modulo run (--workers, --config, --preset ...)
# MODULO            the modulo binary (default: modulo on $PATH, its plugins beside it)
set -euo pipefail

modulo=${MODULO:-modulo}
: "${MODULO_SCHEDULES:?set MODULO_SCHEDULES to the schedule file}"
: "${MODULO_RESULTS:?set MODULO_RESULTS to the results directory on the shared volume}"
if [[ ! -f $MODULO_SCHEDULES ]]; then
  : "${MODULO_GEN:?$MODULO_SCHEDULES does not exist: copy it there, or set MODULO_GEN to the arguments of modulo gen}"
  read -ra gen <<<"$MODULO_GEN"
  mkdir -p "$(dirname "$MODULO_SCHEDULES")"
  # gen is deterministic: every pod makes the same file, byte for byte.
  "$modulo" gen "${gen[@]}" -o "$MODULO_SCHEDULES"
fi
name=$(basename "${MODULO_SCHEDULES%.*}")

case ${1:-shard} in
shard)
  : "${JOB_COMPLETION_INDEX:?not in an Indexed Job: JOB_COMPLETION_INDEX is not set}"
  read -ra extra <<<"${MODULO_ARGS:-}"
  status=0
  "$modulo" run "$MODULO_SCHEDULES" --results-dir "$MODULO_RESULTS" "${extra[@]}" || status=$?
  if ((status == 1)); then status=0; fi
  exit "$status"
  ;;
merge)
  shopt -s nullglob
  shards=("$MODULO_RESULTS/$name".shard-*)
  if ((${#shards[@]} == 0)); then
    echo "modulo-entrypoint: no shard of $name in $MODULO_RESULTS" >&2
    exit 2
  fi
  "$modulo" results merge "${shards[@]}" -o "$MODULO_RESULTS/$name" --schedules "$MODULO_SCHEDULES"
  "$modulo" results "$MODULO_RESULTS/$name"
  ;;
*)
  echo "usage: modulo-entrypoint shard|merge" >&2
  exit 2
  ;;
esac
