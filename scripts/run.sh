#!/usr/bin/env bash
# `make run`: migrate, demo data into an empty database, then web server + Celery worker + beat.
# Ctrl-C or SIGTERM (or any one of the three stopping) stops all of them, within 10 s.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=.venv/bin/python
PORT=${PORT:-8000}
HOST=${HOST:-127.0.0.1}
# the demo runs as the product does (DEBUG off: the site's own 404 and 500 pages, static files compressed and cached);
# DJANGO_SETTINGS_MODULE=config.settings.development gives Django's debug pages instead
export DJANGO_SETTINGS_MODULE=${DJANGO_SETTINGS_MODULE:-config.settings.demo}
# the demo grid moves fast enough to watch: cycles every 10-20 s, the grid simulator on, one grid minute
# per real second (jobs run 30-150 grid minutes; a task pending "30 minutes" comes back after 30 s), unless told
# otherwise
export TASK_BROKERAGE_INTERVAL_SECONDS=${TASK_BROKERAGE_INTERVAL_SECONDS:-15}
export TASK_REFINE_INTERVAL_SECONDS=${TASK_REFINE_INTERVAL_SECONDS:-10}
export JOB_GENERATION_INTERVAL_SECONDS=${JOB_GENERATION_INTERVAL_SECONDS:-20}
export WATCHDOG_INTERVAL_SECONDS=${WATCHDOG_INTERVAL_SECONDS:-30}
export WMCORE_INTERVAL_SECONDS=${WMCORE_INTERVAL_SECONDS:-20}
export WMCORE_LOCATION_INTERVAL_SECONDS=${WMCORE_LOCATION_INTERVAL_SECONDS:-120}
export GRID_SIMULATOR=${GRID_SIMULATOR:-on}
export GRID_SIMULATOR_SPEED=${GRID_SIMULATOR_SPEED:-60}
export GRID_SIMULATOR_INTERVAL_SECONDS=${GRID_SIMULATOR_INTERVAL_SECONDS:-5}

$PY manage.py migrate --noinput
$PY manage.py collectstatic --noinput --verbosity 0
$PY manage.py demo_grid --size "${DEMO_GRID_SIZE:-small}" --if-empty
$PY manage.py dev_admin

pids=()
alive() {
  local pid
  for pid in "${pids[@]}"; do kill -0 "$pid" 2>/dev/null && return 0; done
  return 1
}
# Everything stops within 10 s: a polite TERM (the worker finishes its task: a warm shutdown); after 6 s by the
# clock a KILL of what is left, the worker's pool processes first (the task running is abandoned: its claims
# expire as a dead worker's do). Not Celery's QUIT: a background job of a script starts with SIGQUIT ignored.
stop_all() {
  trap - INT TERM EXIT
  [ ${#pids[@]} -gt 0 ] || return 0
  kill -TERM "${pids[@]}" 2>/dev/null || true
  local until=$(($(date +%s) + 6))
  while alive && [ "$(date +%s)" -lt "$until" ]; do sleep 0.2; done
  if alive; then
    echo "run.sh: still stopping after 6 s; killing what is left" >&2
    local pid
    for pid in "${pids[@]}"; do pkill -KILL -P "$pid" 2>/dev/null || true; done
    kill -KILL "${pids[@]}" 2>/dev/null || true
  fi
  wait 2>/dev/null || true
}
trap stop_all INT TERM EXIT

$PY -m celery -A config.celery worker --loglevel=INFO --concurrency=2 --hostname="worker@%h" &
pids+=($!)
$PY -m celery -A config.celery beat --loglevel=INFO &
pids+=($!)
$PY manage.py runserver "$HOST:$PORT" --noreload &
pids+=($!)
echo "Brokerage monitor on http://$HOST:$PORT/ (admin at /admin/). Ctrl-C stops web, worker and beat."
wait -n
