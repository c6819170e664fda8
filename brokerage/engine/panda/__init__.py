"""PanDA/JEDI brokerage (seeds 000 and 002): the production task broker, the production and analysis job brokers,
the rules they share (software, network, fair share), task states, and synthetic grids for benchmarks."""
