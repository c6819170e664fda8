"""Tools around the monitor, outside the runtime app: the benchmarks (`manage.py bench`, tools/bench/) and the
drivers that run the real PanDA, DIRAC and WMCore code beside ours (tools/peer/). A Django app without models, so
that `bench` is a management command; nothing in `brokerage` or `monitor` imports it."""
