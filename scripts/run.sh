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
export JOB_COUNTS_INTERVAL_SECONDS=${JOB_COUNTS_INTERVAL_SECONDS:-10}  # site and queue lists: 10 grid min old at most
export GRID_SIMULATOR=${GRID_SIMULATOR:-on}
export GRID_SIMULATOR_SPEED=${GRID_SIMULATOR_SPEED:-60}
export GRID_SIMULATOR_INTERVAL_SECONDS=${GRID_SIMULATOR_INTERVAL_SECONDS:-5}

$PY manage.py migrate --noinput
$PY manage.py collectstatic --noinput --verbosity 0
$PY manage.py demo_grid --size "${DEMO_GRID_SIZE:-small}" --if-empty
$PY manage.py dev_admin

# whoever started this script (make, a supervisor, a shell): when it goes away without signalling us (`kill` of
# make's PID, `timeout make run`, a supervisor that stops only its child) we are re-parented and stop too
parent=$PPID
# Celery's prefork pool processes would get a TERM sent to our process group straight from the kernel, and the
# worker logs each as an ERROR and restarts them while it shuts down: the worker runs in a process group of its
# own (`set -m` for that one job) and is told to stop by stop_all, as a service manager tells it
pids=()
all_alive() {
  local pid
  for pid in "${pids[@]}"; do kill -0 "$pid" 2>/dev/null || return 1; done
  return 0
}
alive() {
  local pid
  for pid in "${pids[@]}"; do kill -0 "$pid" 2>/dev/null && return 0; done
  return 1
}
parent_here() {
  # the 4th field of /proc/PID/stat is the parent's PID (the 2nd, the command name, is "(bash)": no spaces)
  kill -0 "$parent" 2>/dev/null && [ "$(cut -d' ' -f4 /proc/$$/stat)" = "$parent" ]
}
# Everything stops within 10 s: a polite TERM (the worker finishes its task: a warm shutdown; gunicorn finishes its
# requests); after 6 s by the clock a KILL of what is left, the worker's pool processes first (the task running is
# abandoned: its claims expire as a dead worker's do). Not Celery's QUIT: a background job of a script starts with
# SIGQUIT ignored.
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

if [ "$(id -u)" = 0 ]; then
  echo "run.sh: running as root, so Celery warns that the worker has superuser privileges; harmless for the demo," \
    "production runs the worker as a service account (docs/production.md)"
fi
# the processes' metrics files (PROMETHEUS_MULTIPROC_DIR, monitor/metrics.py) start empty with the processes: files
# of processes gone would otherwise be summed for ever
metrics_dir="${PROMETHEUS_MULTIPROC_DIR:-${VAR_DIR:-var}/prometheus}"
rm -f "$metrics_dir"/*.db && mkdir -p "$metrics_dir"
set -m
$PY -m celery -A config.celery worker --loglevel=INFO --concurrency=2 --hostname="worker@%h" &
pids+=($!)
set +m
$PY -m celery -A config.celery beat --loglevel=INFO &
pids+=($!)
# gunicorn, as production runs it (docs/production.md), not Django's development server
$PY -m gunicorn config.wsgi --bind "$HOST:$PORT" --workers 2 --timeout 30 --graceful-timeout 4 \
  --access-logfile - --access-logformat '%(h)s "%(r)s" %(s)s %(b)s %(M)sms' &
pids+=($!)
echo "Brokerage monitor on http://$HOST:$PORT/ (admin at /admin/). Ctrl-C stops web, worker and beat."
# until one of the three stops, or whoever started us is gone; a short sleep in the background so a TERM is
# handled at once (bash runs a trap only when the foreground command ends)
while all_alive && parent_here; do
  sleep 0.5 &
  wait $! || true
done
parent_here || echo "run.sh: $parent, which started this, is gone; stopping" >&2
